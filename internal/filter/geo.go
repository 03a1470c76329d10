package filter

// GEOGRAPHY support on WKT. Values are parsed into a small geometry model
// and measured on a sphere of radius earthRadius, as BigQuery does.
//
// Approximations (documented in the package's compatibility notes):
//   - point-in-polygon uses ray casting in longitude/latitude, i.e. treats
//     polygon edges as straight lines in plate carrée rather than geodesics;
//   - ST_EQUALS compares the normalised sets of vertices (and the kind of
//     geometry), not the full point sets: two different vertex lists for the
//     same shape compare unequal;
//   - polygon rings are not checked for self-intersection or orientation.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

const earthRadius = 6371008.8 // metres, the mean radius BigQuery uses

type pt struct{ lng, lat float64 }

type geometry struct {
	points []pt
	lines  [][]pt
	polys  [][][]pt // each polygon: its rings, the first one the shell
}

func (g *geometry) empty() bool {
	return len(g.points) == 0 && len(g.lines) == 0 && len(g.polys) == 0
}

// dim is the highest dimension present: 0 points, 1 lines, 2 polygons; -1
// when empty.
func (g *geometry) dim() int {
	switch {
	case len(g.polys) > 0:
		return 2
	case len(g.lines) > 0:
		return 1
	case len(g.points) > 0:
		return 0
	}
	return -1
}

type wktParser struct {
	s   string
	pos int
}

func (p *wktParser) skip() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n' || p.s[p.pos] == '\r') {
		p.pos++
	}
}

func (p *wktParser) errf(format string, args ...any) error {
	return fmt.Errorf("ST_GeogFromText failed: Invalid WKT at position %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *wktParser) word() string {
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && ((p.s[p.pos] >= 'A' && p.s[p.pos] <= 'Z') || (p.s[p.pos] >= 'a' && p.s[p.pos] <= 'z')) {
		p.pos++
	}
	return strings.ToUpper(p.s[start:p.pos])
}

func (p *wktParser) peekByte() byte {
	p.skip()
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *wktParser) expect(c byte) error {
	if p.peekByte() != c {
		return p.errf("expected %q", c)
	}
	p.pos++
	return nil
}

func (p *wktParser) number() (float64, error) {
	p.skip()
	start := p.pos
	for p.pos < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.pos]) >= 0 {
		p.pos++
	}
	f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		p.pos = start
		return 0, p.errf("expected a number")
	}
	return f, nil
}

// point reads "lng lat [z [m]]". commaOK accepts "lng, lat", the form of
// the Read API reference's own example (POINT(2, 2)).
func (p *wktParser) point(commaOK bool) (pt, error) {
	x, err := p.number()
	if err != nil {
		return pt{}, err
	}
	if commaOK && p.peekByte() == ',' {
		p.pos++
	}
	y, err := p.number()
	if err != nil {
		return pt{}, err
	}
	for i := 0; i < 2; i++ { // Z and M are accepted and dropped
		if c := p.peekByte(); c == ',' || c == ')' {
			break
		}
		if _, err := p.number(); err != nil {
			return pt{}, err
		}
	}
	q, err := newPoint(x, y)
	if err != nil {
		return pt{}, p.errf("%v", err)
	}
	return q, nil
}

func newPoint(lng, lat float64) (pt, error) {
	if math.IsNaN(lng) || math.IsNaN(lat) || math.IsInf(lng, 0) || math.IsInf(lat, 0) {
		return pt{}, fmt.Errorf("longitude and latitude must be finite")
	}
	if lat < -90 || lat > 90 {
		return pt{}, fmt.Errorf("latitude must be in [-90, 90], got %v", lat)
	}
	if lng < -180 || lng > 180 {
		lng = math.Mod(lng+180, 360)
		if lng < 0 {
			lng += 360
		}
		lng -= 180
	}
	return pt{lng, lat}, nil
}

// ptList reads "(pt, pt, ...)".
func (p *wktParser) ptList() ([]pt, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	var out []pt
	for {
		paren := false
		if p.peekByte() == '(' { // MULTIPOINT((1 2), (3 4))
			p.pos++
			paren = true
		}
		q, err := p.point(false)
		if err != nil {
			return nil, err
		}
		if paren {
			if err := p.expect(')'); err != nil {
				return nil, err
			}
		}
		out = append(out, q)
		if p.peekByte() == ',' {
			p.pos++
			continue
		}
		return out, p.expect(')')
	}
}

func (p *wktParser) ringList() ([][]pt, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	var out [][]pt
	for {
		l, err := p.ptList()
		if err != nil {
			return nil, err
		}
		out = append(out, l)
		if p.peekByte() == ',' {
			p.pos++
			continue
		}
		return out, p.expect(')')
	}
}

func (p *wktParser) geom(g *geometry, depth int) error {
	if depth > 32 {
		return p.errf("nested too deeply")
	}
	kind := p.word()
	if kind == "" {
		return p.errf("expected a geometry type")
	}
	switch w := p.word(); w {
	case "", "Z", "M", "ZM":
	case "EMPTY":
		return nil
	default:
		return p.errf("unexpected %q", w)
	}
	if p.word() == "EMPTY" {
		return nil
	}
	switch kind {
	case "POINT":
		if err := p.expect('('); err != nil {
			return err
		}
		q, err := p.point(true)
		if err != nil {
			return err
		}
		g.points = append(g.points, q)
		return p.expect(')')
	case "MULTIPOINT":
		l, err := p.ptList()
		g.points = append(g.points, l...)
		return err
	case "LINESTRING":
		l, err := p.ptList()
		if err == nil && len(l) < 2 {
			return p.errf("a linestring needs at least 2 points")
		}
		g.lines = append(g.lines, l)
		return err
	case "MULTILINESTRING":
		ls, err := p.ringList()
		for _, l := range ls {
			if len(l) < 2 {
				return p.errf("a linestring needs at least 2 points")
			}
		}
		g.lines = append(g.lines, ls...)
		return err
	case "POLYGON":
		rings, err := p.ringList()
		if err != nil {
			return err
		}
		if err := p.checkRings(rings); err != nil {
			return err
		}
		g.polys = append(g.polys, rings)
		return nil
	case "MULTIPOLYGON":
		if err := p.expect('('); err != nil {
			return err
		}
		for {
			rings, err := p.ringList()
			if err != nil {
				return err
			}
			if err := p.checkRings(rings); err != nil {
				return err
			}
			g.polys = append(g.polys, rings)
			if p.peekByte() == ',' {
				p.pos++
				continue
			}
			return p.expect(')')
		}
	case "GEOMETRYCOLLECTION":
		if err := p.expect('('); err != nil {
			return err
		}
		for {
			if err := p.geom(g, depth+1); err != nil {
				return err
			}
			if p.peekByte() == ',' {
				p.pos++
				continue
			}
			return p.expect(')')
		}
	}
	return p.errf("unknown geometry type %q", kind)
}

func (p *wktParser) checkRings(rings [][]pt) error {
	for _, r := range rings {
		if len(r) < 4 || r[0] != r[len(r)-1] {
			return p.errf("a polygon ring needs at least 4 points and must be closed")
		}
	}
	return nil
}

func parseWKT(s string) (*geometry, error) {
	p := &wktParser{s: s}
	g := &geometry{}
	if err := p.geom(g, 0); err != nil {
		return nil, err
	}
	p.skip()
	if p.pos != len(p.s) {
		return nil, p.errf("unexpected trailing text")
	}
	return g, nil
}

func fmtPt(q pt) string {
	return strconv.FormatFloat(q.lng, 'g', -1, 64) + " " + strconv.FormatFloat(q.lat, 'g', -1, 64)
}

func fmtPts(l []pt) string {
	s := make([]string, len(l))
	for i, q := range l {
		s[i] = fmtPt(q)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

func fmtRings(rs [][]pt) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmtPts(r)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// wkt renders g as WKT, as ST_ASTEXT does.
func (g *geometry) wkt() string {
	var parts []string
	switch {
	case len(g.points) == 1:
		parts = append(parts, "POINT("+fmtPt(g.points[0])+")")
	case len(g.points) > 1:
		parts = append(parts, "MULTIPOINT"+fmtPts(g.points))
	}
	switch {
	case len(g.lines) == 1:
		parts = append(parts, "LINESTRING"+fmtPts(g.lines[0]))
	case len(g.lines) > 1:
		parts = append(parts, "MULTILINESTRING"+fmtRings(g.lines))
	}
	switch {
	case len(g.polys) == 1:
		parts = append(parts, "POLYGON"+fmtRings(g.polys[0]))
	case len(g.polys) > 1:
		s := make([]string, len(g.polys))
		for i, p := range g.polys {
			s[i] = fmtRings(p)
		}
		parts = append(parts, "MULTIPOLYGON("+strings.Join(s, ", ")+")")
	}
	switch len(parts) {
	case 0:
		return "GEOMETRYCOLLECTION EMPTY"
	case 1:
		return parts[0]
	}
	return "GEOMETRYCOLLECTION(" + strings.Join(parts, ", ") + ")"
}

type vec3 struct{ x, y, z float64 }

func toVec3(q pt) vec3 {
	lat, lng := q.lat*math.Pi/180, q.lng*math.Pi/180
	return vec3{math.Cos(lat) * math.Cos(lng), math.Cos(lat) * math.Sin(lng), math.Sin(lat)}
}

func (a vec3) dot(b vec3) float64 { return a.x*b.x + a.y*b.y + a.z*b.z }
func (a vec3) cross(b vec3) vec3 {
	return vec3{a.y*b.z - a.z*b.y, a.z*b.x - a.x*b.z, a.x*b.y - a.y*b.x}
}
func (a vec3) norm() vec3 {
	l := math.Sqrt(a.dot(a))
	if l == 0 {
		return a
	}
	return vec3{a.x / l, a.y / l, a.z / l}
}
func (a vec3) scale(f float64) vec3 { return vec3{a.x * f, a.y * f, a.z * f} }
func (a vec3) sub(b vec3) vec3      { return vec3{a.x - b.x, a.y - b.y, a.z - b.z} }

// angle between unit vectors, numerically stable.
func angle(a, b vec3) float64 {
	return math.Atan2(math.Sqrt(a.cross(b).dot(a.cross(b))), a.dot(b))
}

// ptSegAngle is the angular distance from p to the great-circle arc a-b.
func ptSegAngle(p, a, b vec3) float64 {
	n := a.cross(b)
	if n.dot(n) < 1e-30 { // degenerate arc
		return math.Min(angle(p, a), angle(p, b))
	}
	n = n.norm()
	c := p.sub(n.scale(p.dot(n))) // projection onto the arc's plane
	if c.dot(c) > 1e-30 {
		c = c.norm()
		if a.cross(c).dot(n) >= 0 && c.cross(b).dot(n) >= 0 {
			return angle(p, c)
		}
	}
	return math.Min(angle(p, a), angle(p, b))
}

// segsCross reports whether the arcs a-b and c-d intersect.
func segsCross(a, b, c, d vec3) bool {
	n1, n2 := a.cross(b), c.cross(d)
	l := n1.cross(n2)
	if l.dot(l) < 1e-30 {
		return false // parallel or degenerate: covered by endpoint distances
	}
	l = l.norm()
	for _, x := range []vec3{l, l.scale(-1)} {
		if onArc(x, a, b, n1) && onArc(x, c, d, n2) {
			return true
		}
	}
	return false
}

func onArc(x, a, b, n vec3) bool {
	return a.cross(x).dot(n) >= -1e-15 && x.cross(b).dot(n) >= -1e-15
}

// inPolygon: ray casting in lng/lat (see the package note).
func inPolygon(q pt, rings [][]pt) bool {
	in := false
	for _, r := range rings {
		for i, j := 0, len(r)-1; i < len(r); j, i = i, i+1 {
			a, b := r[i], r[j]
			if (a.lat > q.lat) != (b.lat > q.lat) &&
				q.lng < (b.lng-a.lng)*(q.lat-a.lat)/(b.lat-a.lat)+a.lng {
				in = !in
			}
		}
	}
	return in
}

// segments lists the arcs of g's lines and polygon rings.
func (g *geometry) segments() [][2]pt {
	var out [][2]pt
	add := func(l []pt) {
		for i := 1; i < len(l); i++ {
			out = append(out, [2]pt{l[i-1], l[i]})
		}
	}
	for _, l := range g.lines {
		add(l)
	}
	for _, p := range g.polys {
		for _, r := range p {
			add(r)
		}
	}
	return out
}

func (g *geometry) vertices() []pt {
	out := append([]pt(nil), g.points...)
	for _, l := range g.lines {
		out = append(out, l...)
	}
	for _, p := range g.polys {
		for _, r := range p {
			out = append(out, r...)
		}
	}
	return out
}

func (g *geometry) contains(q pt) bool {
	for _, p := range g.polys {
		if inPolygon(q, p) {
			return true
		}
	}
	return false
}

// geoDistance is the minimum distance in metres between a and b; ok is
// false when either is empty (ST_DISTANCE returns NULL).
func geoDistance(a, b *geometry) (float64, bool) {
	if a.empty() || b.empty() {
		return 0, false
	}
	av, bv := a.vertices(), b.vertices()
	for _, q := range av {
		if b.contains(q) {
			return 0, true
		}
	}
	for _, q := range bv {
		if a.contains(q) {
			return 0, true
		}
	}
	as, bs := a.segments(), b.segments()
	for _, s := range as {
		s0, s1 := toVec3(s[0]), toVec3(s[1])
		for _, t := range bs {
			if segsCross(s0, s1, toVec3(t[0]), toVec3(t[1])) {
				return 0, true
			}
		}
	}
	best := math.Inf(1)
	ptTo := func(q pt, g *geometry, segs [][2]pt) {
		v := toVec3(q)
		for _, r := range g.points {
			best = math.Min(best, angle(v, toVec3(r)))
		}
		for _, s := range segs {
			best = math.Min(best, ptSegAngle(v, toVec3(s[0]), toVec3(s[1])))
		}
	}
	for _, q := range av {
		ptTo(q, b, bs)
	}
	for _, q := range bv {
		ptTo(q, a, as)
	}
	return best * earthRadius, true
}

// geoEquals: same dimension and same set of vertices (see the package note).
func geoEquals(a, b *geometry) bool {
	if a.dim() != b.dim() {
		return false
	}
	norm := func(g *geometry) []pt {
		v := g.vertices()
		sort.Slice(v, func(i, j int) bool {
			if v[i].lng != v[j].lng {
				return v[i].lng < v[j].lng
			}
			return v[i].lat < v[j].lat
		})
		out := v[:0]
		for i, q := range v {
			if i == 0 || q != v[i-1] {
				out = append(out, q)
			}
		}
		return out
	}
	x, y := norm(a), norm(b)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
