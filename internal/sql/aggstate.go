package sql

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"unsafe"
)

// The state of one aggregate for every group of a GROUP BY, indexed by
// the group's number (keyTable): typed slices for the aggregates most
// queries use (COUNT, COUNTIF, SUM and AVG of INT64/FLOAT64, MIN/MAX of
// INT64/FLOAT64/STRING), a slice of acc for the others, and a DISTINCT
// aggregate's values in one key table of (group, value) for all its
// groups. A group then costs a few words per aggregate, where it was a
// *group with an []any of keys and an []acc of ~170 bytes per aggregate
// (a GROUP BY of 500,000 keys held ~375 MB). The results are those of
// agg.add and agg.result, which the analytic functions still use: each
// typed state below does what acc does for its aggregate.

// aggStates is one aggregate's state for groups 0..n-1.
type aggStates interface {
	// grow makes room for groups up to n-1 (new groups start empty).
	grow(n int)
	// add accumulates row i of vals (the arguments' values, then the
	// ORDER BY keys) into group g.
	add(g int, vals [][]any, i int, q *selectQuery) error
	// result is group g's value.
	result(g int) any
	// bytes is the memory held (capacities).
	bytes() int64
}

// newAggStates returns the state layer of aggregate a.
func newAggStates(a *agg) aggStates {
	if a.distinct {
		inner := *a
		inner.distinct = false // the set below keeps each value once
		return &distinctStates{inner: newAggStates(&inner)}
	}
	switch {
	case a.having != "":
		return &accStates{a: a} // HAVING MAX|MIN restarts an acc
	case a.star || a.name == "COUNT" || a.name == "COUNTIF":
		return &countStates{a: a}
	case a.name == "SUM" && a.argType == "INT64":
		return &sumIntStates{a: a}
	case a.name == "AVG" && a.argType == "INT64":
		return &avgIntStates{a: a}
	case a.name == "SUM" && a.argType == "FLOAT64", a.name == "AVG" && a.argType == "FLOAT64":
		return &sumFloatStates{a: a}
	case (a.name == "MIN" || a.name == "MAX") && a.argType == "INT64":
		return &extStates[int64]{a: a, less: func(x, y int64) bool { return x < y }}
	case (a.name == "MIN" || a.name == "MAX") && a.argType == "STRING":
		return &extStates[string]{a: a, less: func(x, y string) bool { return x < y },
			size: func(s string) int64 { return int64(len(s)) }}
	case (a.name == "MIN" || a.name == "MAX") && a.argType == "FLOAT64":
		return &extStates[float64]{a: a, less: func(x, y float64) bool { return x < y }, nan: true}
	}
	return &accStates{a: a}
}

// bitset is one bit per group.
type bitset []uint64

func (b bitset) has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int)      { b[i>>6] |= 1 << (i & 63) }

func growBits(b bitset, n int) bitset {
	for len(b)*64 < n {
		b = append(b, 0)
	}
	return b
}

func growTo[T any](s []T, n int) []T {
	if n > len(s) {
		s = append(s, make([]T, n-len(s))...)
	}
	return s
}

func typeErr(a *agg, v any) error {
	return fmt.Errorf("sql: internal: %s of a %s argument got %T", a.name, a.argType, v)
}

// countStates: COUNT(*), COUNT(x), COUNTIF(x).
type countStates struct {
	a *agg
	n []int64
}

func (s *countStates) grow(n int) { s.n = growTo(s.n, n) }
func (s *countStates) add(g int, vals [][]any, i int, _ *selectQuery) error {
	switch {
	case s.a.star:
		s.n[g]++
	case s.a.name == "COUNTIF":
		if vals[0][i] == true {
			s.n[g]++
		}
	case vals[0][i] != nil:
		s.n[g]++
	}
	return nil
}
func (s *countStates) result(g int) any { return s.n[g] }
func (s *countStates) bytes() int64     { return 8 * int64(cap(s.n)) }

// sumIntStates: SUM of INT64, summed in 128 bits; an error only when the
// final value overflows, as acc's.
type sumIntStates struct {
	a   *agg
	sum []int128
	has bitset // a non-NULL value was added
}

func (s *sumIntStates) grow(n int) { s.sum, s.has = growTo(s.sum, n), growBits(s.has, n) }
func (s *sumIntStates) add(g int, vals [][]any, i int, q *selectQuery) error {
	v := vals[0][i]
	if v == nil {
		return nil
	}
	x, ok := v.(int64)
	if !ok {
		return typeErr(s.a, v)
	}
	s.sum[g].add(x)
	s.has.set(g)
	return nil
}
func (s *sumIntStates) result(g int) any {
	if !s.has.has(g) {
		return nil
	}
	return s.sum[g].sumResult(s.a)
}
func (s *sumIntStates) bytes() int64 { return 16*int64(cap(s.sum)) + 8*int64(cap(s.has)) }

// sumFloatStates: SUM of FLOAT64, AVG of FLOAT64 (a float sum
// in row order, as acc's sumF).
type sumFloatStates struct {
	a   *agg
	sum []float64
	n   []int64
}

func (s *sumFloatStates) grow(n int) { s.sum, s.n = growTo(s.sum, n), growTo(s.n, n) }
func (s *sumFloatStates) add(g int, vals [][]any, i int, _ *selectQuery) error {
	switch x := vals[0][i].(type) {
	case nil:
		return nil
	case int64:
		s.sum[g] += float64(x)
	case float64:
		s.sum[g] += x
	default:
		return typeErr(s.a, x)
	}
	s.n[g]++
	return nil
}
func (s *sumFloatStates) result(g int) any {
	if s.n[g] == 0 {
		return nil
	}
	if s.a.name == "AVG" {
		return s.sum[g] / float64(s.n[g])
	}
	return s.sum[g]
}
func (s *sumFloatStates) bytes() int64 { return 8*int64(cap(s.sum)) + 8*int64(cap(s.n)) }

// extStates: MIN or MAX of INT64, FLOAT64 or STRING. As acc's, the first
// of equal values stays (-0 and +0 are equal) and a NaN makes the result
// NaN.
type extStates[T any] struct {
	a     *agg
	less  func(x, y T) bool
	size  func(T) int64 // bytes a value points to, besides its slot
	nan   bool          // FLOAT64: track NaNs
	ext   []T
	has   bitset
	isNaN bitset
	held  int64 // what size says the values hold
}

func (s *extStates[T]) grow(n int) {
	s.ext, s.has = growTo(s.ext, n), growBits(s.has, n)
	if s.nan {
		s.isNaN = growBits(s.isNaN, n)
	}
}
func (s *extStates[T]) add(g int, vals [][]any, i int, _ *selectQuery) error {
	v := vals[0][i]
	if v == nil {
		return nil
	}
	x, ok := v.(T)
	if !ok {
		return typeErr(s.a, v)
	}
	if s.nan {
		if f := any(x).(float64); math.IsNaN(f) {
			s.isNaN.set(g)
			return nil
		}
	}
	if s.has.has(g) {
		cur := s.ext[g]
		if s.a.name == "MIN" && !s.less(x, cur) || s.a.name == "MAX" && !s.less(cur, x) {
			return nil
		}
		if s.size != nil {
			s.held -= s.size(cur)
		}
	}
	s.ext[g] = x
	s.has.set(g)
	if s.size != nil {
		s.held += s.size(x)
	}
	return nil
}
func (s *extStates[T]) result(g int) any {
	if s.nan && s.isNaN.has(g) {
		return math.NaN()
	}
	if !s.has.has(g) {
		return nil
	}
	return s.ext[g]
}
func (s *extStates[T]) bytes() int64 {
	var zero T
	return int64(unsafe.Sizeof(zero))*int64(cap(s.ext)) + 8*int64(cap(s.has)+cap(s.isNaN)) + s.held
}

// accStates: any aggregate, through acc (agg.add, agg.result). What an
// acc grows to (ARRAY_AGG and STRING_AGG values, a sketch) is counted as
// runAggregate charged it before.
type accStates struct {
	a    *agg
	accs []acc
	held int64
}

func (s *accStates) grow(n int) { s.accs = growTo(s.accs, n) }
func (s *accStates) add(g int, vals [][]any, i int, q *selectQuery) error {
	st := &s.accs[g]
	kept, sketch := len(st.vals), st.sketchBytes
	if err := s.a.add(st, vals, i, q); err != nil {
		return err
	}
	s.held += st.sketchBytes - sketch
	for _, v := range st.vals[kept:] {
		s.held += rowBytes(v.keys) + cellBytes(v.v) + cellBytes(v.x)
	}
	return nil
}
func (s *accStates) result(g int) any { return s.a.result(&s.accs[g]) }
func (s *accStates) bytes() int64 {
	return int64(unsafe.Sizeof(acc{}))*int64(cap(s.accs)) + s.held
}

// distinctStates: a DISTINCT aggregate. Each group's values are kept
// once in one key table of (group, value) keys; a value new to its
// group goes to the inner state (the same aggregate without DISTINCT).
// NULLs go to the inner state as they come: each aggregate decides
// what a NULL does (ARRAY_AGG keeps it), as agg.add does.
type distinctStates struct {
	inner aggStates
	seen  keyTable
	kb    []byte
}

func (s *distinctStates) grow(n int) { s.inner.grow(n) }
func (s *distinctStates) add(g int, vals [][]any, i int, q *selectQuery) error {
	v := vals[0][i]
	if v == nil {
		return s.inner.add(g, vals, i, q)
	}
	s.kb = appendKey(binary.BigEndian.AppendUint32(s.kb[:0], uint32(g)), v)
	_, added, err := s.seen.insert(s.kb)
	if err != nil || !added {
		return err
	}
	return s.inner.add(g, vals, i, q)
}
func (s *distinctStates) result(g int) any { return s.inner.result(g) }
func (s *distinctStates) bytes() int64 {
	return s.inner.bytes() + s.seen.bytes() + int64(cap(s.kb))
}

// int128 is an exact sum of INT64 values (AVG(INT64): BigQuery's AVG is
// exact enough that AVG over MaxInt64 and MinInt64 is -0.5, which a
// float64 sum loses; SUM(INT64): GoogleSQL sums in 128 bits and checks
// only the final value, so that MaxInt64 + 1 - 1 is MaxInt64 whatever
// the rows' order). 2^63 rows would be needed to overflow it.
type int128 struct {
	hi int64
	lo uint64
}

func (s *int128) add(x int64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, uint64(x), 0)
	s.hi += x>>63 + int64(c)
}

// sumResult is s as a SUM(INT64)'s result: an aggOverflow of a when it
// does not fit in INT64.
func (s int128) sumResult(a *agg) any {
	v := int64(s.lo)
	if s.hi != v>>63 {
		return aggOverflow{a}
	}
	return v
}

// aggOverflow is the result of a SUM whose final value overflows its
// type: results have no error return, so their callers check for it
// (selectQuery.aggResult).
type aggOverflow struct{ a *agg }

// aggFail is the result of an aggregate whose final value is an error
// (SUM of INTERVAL out of range), positioned at the call.
type aggFail struct {
	a   *agg
	err error
}

// aggResult is v, an aggregate's result, or the error it stands for.
func (q *selectQuery) aggResult(v any) (any, error) {
	switch o := v.(type) {
	case aggOverflow:
		return nil, q.errf(o.a.pos, "Int64 overflow in SUM")
	case aggFail:
		return nil, q.errf(o.a.pos, "%s", o.err.Error())
	}
	return v, nil
}

// avg is s / n, rounded once to the nearest FLOAT64.
func (s int128) avg(n int64) float64 {
	v := new(big.Int).Lsh(big.NewInt(s.hi), 64)
	v.Add(v, new(big.Int).SetUint64(s.lo))
	f, _ := new(big.Rat).SetFrac(v, big.NewInt(n)).Float64()
	return f
}

// avgIntStates: AVG of INT64, summed exactly.
type avgIntStates struct {
	a   *agg
	sum []int128
	n   []int64
}

func (s *avgIntStates) grow(n int) { s.sum, s.n = growTo(s.sum, n), growTo(s.n, n) }
func (s *avgIntStates) add(g int, vals [][]any, i int, _ *selectQuery) error {
	switch x := vals[0][i].(type) {
	case nil:
		return nil
	case int64:
		s.sum[g].add(x)
	default:
		return typeErr(s.a, x)
	}
	s.n[g]++
	return nil
}
func (s *avgIntStates) result(g int) any {
	if s.n[g] == 0 {
		return nil
	}
	return s.sum[g].avg(s.n[g])
}
func (s *avgIntStates) bytes() int64 { return 16*int64(cap(s.sum)) + 8*int64(cap(s.n)) }
