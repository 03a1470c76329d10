// Geography functions (ST_*) of the expression language.

package filter

import (
	"fmt"
)

func geomOf(v value) (*geometry, error) {
	if v.g != nil {
		return v.g, nil
	}
	return parseWKT(v.s)
}

func registerGeo() {
	builtins["ST_GEOGFROMTEXT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 3); err != nil {
			return nil, err
		}
		want := []typ{tString, tBool, tBool}[:len(args)]
		return c.sig(e, args, want, tGeo, func(a []value) (value, error) {
			g, err := parseWKT(a[0].s)
			if err != nil {
				return value{}, err
			}
			return value{s: g.wkt(), g: g}, nil
		})
	}
	builtins["ST_GEOGFROMWKT"] = builtins["ST_GEOGFROMTEXT"]
	// The Read API reference's own example spells it st_geofromtext.
	builtins["ST_GEOFROMTEXT"] = builtins["ST_GEOGFROMTEXT"]
	builtins["ST_GEOGPOINT"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tFloat, tFloat}, tGeo, func(a []value) (value, error) {
			q, err := newPoint(a[0].f, a[1].f)
			if err != nil {
				return value{}, fmt.Errorf("ST_GEOGPOINT: %v", err)
			}
			g := &geometry{points: []pt{q}}
			return value{s: g.wkt(), g: g}, nil
		})
	}
	geo2 := func(ret typ, extra []typ, f func(a, b *geometry, rest []value) (value, error)) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, append([]typ{tGeo, tGeo}, extra...), ret, func(a []value) (value, error) {
				g1, err := geomOf(a[0])
				if err != nil {
					return value{}, err
				}
				g2, err := geomOf(a[1])
				if err != nil {
					return value{}, err
				}
				return f(g1, g2, a[2:])
			})
		}
	}
	builtins["ST_EQUALS"] = geo2(tBool, nil, func(a, b *geometry, _ []value) (value, error) {
		return value{b: geoEquals(a, b)}, nil
	})
	builtins["ST_DISTANCE"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(args) == 3 {
			return geo2(tFloat, []typ{tBool}, geoDist)(c, e, args)
		}
		return geo2(tFloat, nil, geoDist)(c, e, args)
	}
	builtins["ST_DWITHIN"] = func(c *checker, e *Call, args []node) (node, error) {
		extra := []typ{tFloat}
		if len(args) == 4 {
			extra = append(extra, tBool)
		}
		return geo2(tBool, extra, func(a, b *geometry, rest []value) (value, error) {
			d, ok := geoDistance(a, b)
			if !ok {
				return value{b: false}, nil
			}
			return value{b: d <= rest[0].f}, nil
		})(c, e, args)
	}
	builtins["ST_INTERSECTS"] = geo2(tBool, nil, func(a, b *geometry, _ []value) (value, error) {
		d, ok := geoDistance(a, b)
		return value{b: ok && d == 0}, nil
	})
	coord := func(x bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tGeo}, tFloat, func(a []value) (value, error) {
				g, err := geomOf(a[0])
				if err != nil {
					return value{}, err
				}
				if g.empty() {
					return nullValue, nil
				}
				if len(g.points) != 1 || len(g.lines) > 0 || len(g.polys) > 0 {
					return value{}, fmt.Errorf("%s: input must be a point", e.Name)
				}
				if x {
					return value{f: g.points[0].lng}, nil
				}
				return value{f: g.points[0].lat}, nil
			})
		}
	}
	builtins["ST_X"] = coord(true)
	builtins["ST_Y"] = coord(false)
	builtins["ST_ASTEXT"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tGeo}, tString, func(a []value) (value, error) {
			g, err := geomOf(a[0])
			if err != nil {
				return value{}, err
			}
			return value{s: g.wkt()}, nil
		})
	}
}

func geoDist(a, b *geometry, _ []value) (value, error) {
	d, ok := geoDistance(a, b)
	if !ok {
		return nullValue, nil
	}
	return value{f: d}, nil
}
