package sql

import (
	"context"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/hll"
)

// HLL_COUNT.INIT, HLL_COUNT.MERGE and HLL_COUNT.MERGE_PARTIAL (the
// scalar HLL_COUNT.EXTRACT is internal/filter's). The sketches are
// internal/hll's, in bqstore's own BYTES form: they merge with each
// other, not with BigQuery's (docs/compatibility.md). Values are hashed
// as APPROX_COUNT_DISTINCT hashes them, so HLL_COUNT.EXTRACT of
// HLL_COUNT.INIT(x, 14) is APPROX_COUNT_DISTINCT(x).

// hllDefaultPrecision is HLL_COUNT.INIT's precision when none is given.
const hllDefaultPrecision = 15

var hllTypes = map[string]byte{"INT64": hll.TypeInt64, "NUMERIC": hll.TypeNumeric,
	"BIGNUMERIC": hll.TypeBigNumeric, "STRING": hll.TypeString, "BYTES": hll.TypeBytes}

// checkHLL checks an HLL_COUNT aggregate's arguments and sets its result
// type; a.buckets is HLL_COUNT.INIT's precision.
func (q *selectQuery) checkHLL(a *agg, types []string, sig func(string) error) error {
	switch a.name {
	case "HLL_COUNT.INIT":
		const s = "HLL_COUNT.INIT(INT64|NUMERIC|BIGNUMERIC|STRING|BYTES [, INT64])"
		if len(a.args) < 1 || len(a.args) > 2 {
			return sig(s)
		}
		if _, ok := hllTypes[a.argType]; !ok {
			return sig(s)
		}
		a.buckets = hllDefaultPrecision
		if len(a.args) == 2 {
			x := a.args[1]
			if len(x.Columns()) > 0 || x.Type() != "INT64" {
				return q.errf(a.pos, "HLL_COUNT.INIT requires the precision argument to be an INT64 literal or query parameter")
			}
			v, err := x.Values(context.Background(), nil, 1)
			if err != nil {
				return err
			}
			p, ok := v[0].(int64)
			if !ok || p < hll.MinPrecision || p > hll.MaxPrecision {
				return q.errf(a.pos, "HLL_COUNT.INIT precision must be between %d and %d", hll.MinPrecision, hll.MaxPrecision)
			}
			a.buckets = p
			a.args = a.args[:1]
		}
		a.typ = "BYTES"
	case "HLL_COUNT.MERGE", "HLL_COUNT.MERGE_PARTIAL":
		if len(a.args) != 1 || a.argType != "BYTES" && a.argType != "NULL" {
			return sig(a.name + "(BYTES)")
		}
		a.typ = "BYTES"
		if a.name == "HLL_COUNT.MERGE" {
			a.typ = "INT64"
		}
	}
	return nil
}

// addHLL accumulates a non-NULL value v into s.sketch (s.sketchType the
// type code of the values counted).
func (a *agg) addHLL(s *acc, v any, q *selectQuery) error {
	if a.name == "HLL_COUNT.INIT" {
		if s.sketch == nil {
			s.sketch, s.sketchType = hll.New(int(a.buckets)), hllTypes[a.argType]
		}
		s.sketchBytes += s.sketch.Add(filter.Fingerprint64(appendKey(nil, v)))
		return nil
	}
	o, typ, err := hll.Decode([]byte(v.(string)))
	if err != nil {
		return q.errf(a.pos, "%s: the argument is not a sketch of HLL_COUNT.INIT", a.name)
	}
	if s.sketch == nil {
		s.sketch, s.sketchType = o, typ
		s.sketchBytes += o.Bytes()
		return nil
	}
	if typ != s.sketchType {
		return q.errf(a.pos, "%s: the sketches were initialized on different types", a.name)
	}
	if grown := s.sketch.Merge(o); grown > 0 {
		s.sketchBytes += grown
	}
	return nil
}

// hllResult is the aggregate's value for the group: no sketch (no rows,
// or only NULLs) is NULL, and 0 for HLL_COUNT.MERGE.
func (a *agg) hllResult(s *acc) any {
	switch {
	case a.name == "HLL_COUNT.MERGE" && s.sketch == nil:
		return int64(0)
	case a.name == "HLL_COUNT.MERGE":
		return s.sketch.Estimate()
	case s.sketch == nil:
		return nil
	}
	return string(s.sketch.Encode(s.sketchType))
}
