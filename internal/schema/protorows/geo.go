package protorows

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// jsonValid reports whether b is one valid JSON value.
func jsonValid(b []byte) bool { return json.Valid(b) }

// point is a longitude/latitude pair.
type point [2]float64

// geom is a parsed geography.
type geom struct {
	kind  string    // POINT, LINESTRING, POLYGON, MULTIPOINT, MULTILINESTRING, MULTIPOLYGON, GEOMETRYCOLLECTION
	pts   []point   // POINT (one), LINESTRING
	rings [][]point // POLYGON
	parts []geom    // MULTI* and GEOMETRYCOLLECTION
}

func (g *geom) empty() bool {
	return len(g.pts) == 0 && len(g.rings) == 0 && len(g.parts) == 0
}

// ParseGeography validates a GEOGRAPHY value given as WKT or GeoJSON and
// returns it as WKT in a canonical spelling (upper-case keywords, "x y"
// coordinates, ", " separators; any empty geography is
// GEOMETRYCOLLECTION EMPTY), as BigQuery stores and returns WKT. Longitudes
// must be in [-180, 180], latitudes in [-90, 90]; a line has at least two
// points; a polygon ring at least four and is closed.
//
// Unlike BigQuery we do not re-orient polygons or remove duplicate
// vertices, and only two-dimensional coordinates are accepted.
func ParseGeography(s string) (string, error) {
	t := strings.TrimSpace(s)
	var g geom
	var err error
	if strings.HasPrefix(t, "{") {
		g, err = parseGeoJSON([]byte(t))
	} else {
		p := &wktParser{s: t}
		g, err = p.geometry(0)
		if err == nil {
			p.skip()
			if p.i != len(p.s) {
				err = fmt.Errorf("unexpected %q after the geometry", p.rest())
			}
		}
	}
	if err != nil {
		return "", err
	}
	if err := validate(&g, 0); err != nil {
		return "", err
	}
	var b strings.Builder
	writeWKT(&b, &g)
	return b.String(), nil
}

type wktParser struct {
	s string
	i int
}

func (p *wktParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *wktParser) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *wktParser) word() string {
	p.skip()
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z') {
		p.i++
	}
	return strings.ToUpper(p.s[start:p.i])
}

func (p *wktParser) punct(c byte) bool {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *wktParser) want(c byte) error {
	if !p.punct(c) {
		return fmt.Errorf("expected %q at %q", c, p.rest())
	}
	return nil
}

func (p *wktParser) number() (float64, error) {
	p.skip()
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("0123456789+-.eE", p.s[p.i]) >= 0 {
		p.i++
	}
	v, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad coordinate %q", p.s[start:p.i])
	}
	return v, nil
}

func (p *wktParser) coord() (point, error) {
	x, err := p.number()
	if err != nil {
		return point{}, err
	}
	y, err := p.number()
	if err != nil {
		return point{}, err
	}
	return point{x, y}, nil
}

// coords reads '(' x y, ... ')'.
func (p *wktParser) coords() ([]point, error) {
	if err := p.want('('); err != nil {
		return nil, err
	}
	var out []point
	for {
		c, err := p.coord()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if p.punct(')') {
			return out, nil
		}
		if err := p.want(','); err != nil {
			return nil, err
		}
	}
}

// isEmpty consumes EMPTY when next.
func (p *wktParser) isEmpty() bool {
	save := p.i
	if p.word() == "EMPTY" {
		return true
	}
	p.i = save
	return false
}

func (p *wktParser) geometry(depth int) (geom, error) {
	if depth > 32 {
		return geom{}, errors.New("geometry nested too deep")
	}
	kind := p.word()
	g := geom{kind: kind}
	switch kind {
	case "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION":
	case "":
		return g, fmt.Errorf("expected a WKT geometry at %q", p.rest())
	default:
		return g, fmt.Errorf("unknown geometry type %s", kind)
	}
	if p.isEmpty() {
		return g, nil
	}
	var err error
	switch kind {
	case "POINT":
		g.pts, err = p.coords()
		if err == nil && len(g.pts) != 1 {
			err = errors.New("a POINT has one coordinate")
		}
	case "LINESTRING":
		g.pts, err = p.coords()
	case "POLYGON":
		g.rings, err = p.rings()
	case "MULTIPOINT":
		err = p.list(func() error {
			var c point
			var err error
			if p.punct('(') {
				if c, err = p.coord(); err == nil {
					err = p.want(')')
				}
			} else {
				c, err = p.coord()
			}
			g.parts = append(g.parts, geom{kind: "POINT", pts: []point{c}})
			return err
		})
	case "MULTILINESTRING":
		err = p.list(func() error {
			pts, err := p.coords()
			g.parts = append(g.parts, geom{kind: "LINESTRING", pts: pts})
			return err
		})
	case "MULTIPOLYGON":
		err = p.list(func() error {
			rings, err := p.rings()
			g.parts = append(g.parts, geom{kind: "POLYGON", rings: rings})
			return err
		})
	case "GEOMETRYCOLLECTION":
		err = p.list(func() error {
			sub, err := p.geometry(depth + 1)
			g.parts = append(g.parts, sub)
			return err
		})
	}
	return g, err
}

func (p *wktParser) rings() ([][]point, error) {
	var out [][]point
	err := p.list(func() error {
		r, err := p.coords()
		out = append(out, r)
		return err
	})
	return out, err
}

// list reads '(' item, ... ')'.
func (p *wktParser) list(item func() error) error {
	if err := p.want('('); err != nil {
		return err
	}
	for {
		if err := item(); err != nil {
			return err
		}
		if p.punct(')') {
			return nil
		}
		if err := p.want(','); err != nil {
			return err
		}
	}
}

func validate(g *geom, depth int) error {
	for _, c := range g.pts {
		if err := checkPoint(c); err != nil {
			return err
		}
	}
	switch g.kind {
	case "LINESTRING":
		if len(g.pts) == 1 {
			return errors.New("a LINESTRING needs at least two points")
		}
	case "POLYGON":
		for _, r := range g.rings {
			if len(r) < 4 {
				return errors.New("a POLYGON ring needs at least four points")
			}
			if r[0] != r[len(r)-1] {
				return errors.New("a POLYGON ring must be closed")
			}
			for _, c := range r {
				if err := checkPoint(c); err != nil {
					return err
				}
			}
		}
	}
	for i := range g.parts {
		if err := validate(&g.parts[i], depth+1); err != nil {
			return err
		}
	}
	return nil
}

func checkPoint(c point) error {
	if c[0] < -180 || c[0] > 180 {
		return fmt.Errorf("longitude %v is out of [-180, 180]", c[0])
	}
	if c[1] < -90 || c[1] > 90 {
		return fmt.Errorf("latitude %v is out of [-90, 90]", c[1])
	}
	return nil
}

func fmtCoord(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func writePoints(b *strings.Builder, pts []point) {
	b.WriteByte('(')
	for i, c := range pts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(fmtCoord(c[0]))
		b.WriteByte(' ')
		b.WriteString(fmtCoord(c[1]))
	}
	b.WriteByte(')')
}

func writeRings(b *strings.Builder, rings [][]point) {
	b.WriteByte('(')
	for i, r := range rings {
		if i > 0 {
			b.WriteString(", ")
		}
		writePoints(b, r)
	}
	b.WriteByte(')')
}

func writeWKT(b *strings.Builder, g *geom) {
	if g.empty() {
		b.WriteString("GEOMETRYCOLLECTION EMPTY")
		return
	}
	b.WriteString(g.kind)
	switch g.kind {
	case "POINT", "LINESTRING":
		writePoints(b, g.pts)
	case "POLYGON":
		writeRings(b, g.rings)
	case "MULTIPOINT":
		pts := make([]point, len(g.parts))
		for i := range g.parts {
			pts[i] = g.parts[i].pts[0]
		}
		writePoints(b, pts)
	case "MULTILINESTRING":
		b.WriteByte('(')
		for i := range g.parts {
			if i > 0 {
				b.WriteString(", ")
			}
			writePoints(b, g.parts[i].pts)
		}
		b.WriteByte(')')
	case "MULTIPOLYGON":
		b.WriteByte('(')
		for i := range g.parts {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRings(b, g.parts[i].rings)
		}
		b.WriteByte(')')
	case "GEOMETRYCOLLECTION":
		b.WriteByte('(')
		for i := range g.parts {
			if i > 0 {
				b.WriteString(", ")
			}
			writeWKT(b, &g.parts[i])
		}
		b.WriteByte(')')
	}
}

// geoJSON is a GeoJSON geometry object.
type geoJSON struct {
	Type        string            `json:"type"`
	Coordinates json.RawMessage   `json:"coordinates"`
	Geometries  []json.RawMessage `json:"geometries"`
}

func parseGeoJSON(b []byte) (geom, error) { return geoJSONDepth(b, 0) }

func geoJSONDepth(b []byte, depth int) (geom, error) {
	if depth > 32 {
		return geom{}, errors.New("geometry nested too deep")
	}
	var gj geoJSON
	if err := json.Unmarshal(b, &gj); err != nil {
		return geom{}, fmt.Errorf("invalid GeoJSON: %v", err)
	}
	var g geom
	var err error
	decode := func(v any) error {
		if len(gj.Coordinates) == 0 {
			return errors.New("invalid GeoJSON: no coordinates")
		}
		if err := json.Unmarshal(gj.Coordinates, v); err != nil {
			return fmt.Errorf("invalid GeoJSON coordinates: %v", err)
		}
		return nil
	}
	switch gj.Type {
	case "Point":
		var c []float64
		if err = decode(&c); err == nil {
			var pt point
			if pt, err = geoPoint(c); err == nil {
				g = geom{kind: "POINT", pts: []point{pt}}
			}
		}
	case "LineString", "MultiPoint":
		var cs [][]float64
		if err = decode(&cs); err == nil {
			var pts []point
			if pts, err = geoPoints(cs); err == nil {
				if gj.Type == "LineString" {
					g = geom{kind: "LINESTRING", pts: pts}
				} else {
					g = geom{kind: "MULTIPOINT"}
					for _, pt := range pts {
						g.parts = append(g.parts, geom{kind: "POINT", pts: []point{pt}})
					}
				}
			}
		}
	case "Polygon", "MultiLineString":
		var cs [][][]float64
		if err = decode(&cs); err == nil {
			var rings [][]point
			for _, r := range cs {
				pts, e := geoPoints(r)
				if e != nil {
					err = e
					break
				}
				rings = append(rings, pts)
			}
			if gj.Type == "Polygon" {
				g = geom{kind: "POLYGON", rings: rings}
			} else {
				g = geom{kind: "MULTILINESTRING"}
				for _, r := range rings {
					g.parts = append(g.parts, geom{kind: "LINESTRING", pts: r})
				}
			}
		}
	case "MultiPolygon":
		var cs [][][][]float64
		if err = decode(&cs); err == nil {
			g = geom{kind: "MULTIPOLYGON"}
			for _, poly := range cs {
				var rings [][]point
				for _, r := range poly {
					pts, e := geoPoints(r)
					if e != nil {
						return geom{}, e
					}
					rings = append(rings, pts)
				}
				g.parts = append(g.parts, geom{kind: "POLYGON", rings: rings})
			}
		}
	case "GeometryCollection":
		g = geom{kind: "GEOMETRYCOLLECTION"}
		for _, sub := range gj.Geometries {
			sg, e := geoJSONDepth(sub, depth+1)
			if e != nil {
				return geom{}, e
			}
			g.parts = append(g.parts, sg)
		}
	default:
		return geom{}, fmt.Errorf("invalid GeoJSON: unsupported type %q", gj.Type)
	}
	return g, err
}

func geoPoint(c []float64) (point, error) {
	if len(c) != 2 {
		return point{}, fmt.Errorf("invalid GeoJSON position %v: want [longitude, latitude]", c)
	}
	return point{c[0], c[1]}, nil
}

func geoPoints(cs [][]float64) ([]point, error) {
	out := make([]point, len(cs))
	for i, c := range cs {
		pt, err := geoPoint(c)
		if err != nil {
			return nil, err
		}
		out[i] = pt
	}
	return out, nil
}
