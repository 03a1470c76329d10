package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// groupState is what a GROUP BY holds while it scans: the groups,
// numbered in order of first row by a keyTable of their byte-encoded keys
// (appendKey: NULL, NaN and ±0 keys are one key each, as BigQuery groups
// them); each group's key values, appended to Arrow builders when the
// group appears (its first row's values: the result's key columns); its
// grouping set when there are several (ROLLUP); and each aggregate's
// state for every group (aggstate.go).
//
// Memory: bytes is the capacity of every structure above, charged to the
// budget as it grows (charge, once a batch); nothing is charged per
// group besides.
type groupState struct {
	table  keyTable
	keys   *array.RecordBuilder // one builder per GROUP BY expression
	sets   []int32              // group -> grouping set, when multi
	multi  bool
	seen   []bool // grouping sets that have a group
	states []aggStates
	aggs   []*agg
	kb     []byte
	// keyHeld estimates, for key builders of nested types, what their
	// values hold (builderBytes knows the flat ones).
	keyHeld int64
	// charged is what was charged to the budget for the table and keys
	// (charged[0]) and for each aggregate (charged[1+j]).
	charged []int64
}

func newGroupState(keyFields []*schema.Field, aggs []*agg, multi bool) *groupState {
	g := &groupState{
		keys:    array.NewRecordBuilder(memory.DefaultAllocator, schema.ToArrow(&schema.Schema{Fields: keyFields})),
		multi:   multi,
		aggs:    aggs,
		charged: make([]int64, 1+len(aggs)),
	}
	for _, a := range aggs {
		g.states = append(g.states, newAggStates(a))
	}
	return g
}

func (g *groupState) release() { g.keys.Release() }

// len is the number of groups.
func (g *groupState) len() int { return g.table.len() }

// set is group i's grouping set.
func (g *groupState) set(i int) int {
	if !g.multi {
		return 0
	}
	return int(g.sets[i])
}

// hasSet reports whether a group of grouping set set exists.
func (g *groupState) hasSet(set int) bool { return set < len(g.seen) && g.seen[set] }

// group returns the number of row i's group in grouping set set (keys[k]
// the values of GROUP BY expression k; those not grouped in the set are
// NULL), adding the group if it is new.
func (g *groupState) group(keys [][]any, i, set int, grouped []bool) (int, error) {
	kb := g.kb[:0]
	if g.multi {
		kb = appendKey(kb, int64(set))
	}
	for k := range grouped {
		if grouped[k] {
			kb = appendKey(kb, keys[k][i])
		} else {
			kb = appendKey(kb, nil)
		}
	}
	g.kb = kb
	idx, added, err := g.table.insert(kb)
	if err != nil || !added {
		return idx, err
	}
	for k, fb := range g.keys.Fields() {
		var v any
		if grouped[k] {
			v = keys[k][i]
		}
		if v == nil {
			fb.AppendNull()
			continue
		}
		if err := appendValue(fb, v, true); err != nil {
			return 0, err
		}
		if _, flat := builderBytes(fb); !flat {
			g.keyHeld += cellBytes(v)
		}
	}
	if g.multi {
		g.sets = append(g.sets, int32(set))
	}
	for len(g.seen) <= set {
		g.seen = append(g.seen, false)
	}
	g.seen[set] = true
	for _, s := range g.states {
		s.grow(idx + 1)
	}
	return idx, nil
}

// charge charges the budget what the groups hold beyond what was
// charged before, each part under its operator's name.
func (g *groupState) charge(q *selectQuery) error {
	held := g.table.bytes() + 4*int64(cap(g.sets)) + int64(cap(g.kb)) + g.keyHeld
	for _, fb := range g.keys.Fields() {
		n, _ := builderBytes(fb)
		held += n
	}
	if err := g.chargePart(q, 0, held, "GROUP BY operations"); err != nil {
		return err
	}
	for j, a := range g.aggs {
		what := a.name + " operations"
		if a.distinct {
			what = "DISTINCT aggregate operations"
		}
		if err := g.chargePart(q, 1+j, g.states[j].bytes(), what); err != nil {
			return err
		}
	}
	return nil
}

func (g *groupState) chargePart(q *selectQuery, part int, held int64, what string) error {
	d := held - g.charged[part]
	if d <= 0 {
		return nil
	}
	g.charged[part] = held
	return q.charge(d, what)
}

// record returns the groups as a record: the key columns, then the
// columns of fields, cell (col, group) given by value.
func (g *groupState) record(fields []*schema.Field, value func(col, row int) any) (arrow.RecordBatch, error) {
	n := g.len()
	keys := g.keys.NewRecordBatch()
	defer keys.Release()
	rest, err := buildRecord(&schema.Schema{Fields: fields}, n, value)
	if err != nil {
		return nil, err
	}
	defer rest.Release()
	return joinRecords(keys, rest), nil
}

// joinRecords returns the columns of a then b (of as many rows) as one
// record.
func joinRecords(a, b arrow.RecordBatch) arrow.RecordBatch {
	var fields []arrow.Field
	var cols []arrow.Array
	for _, r := range []arrow.RecordBatch{a, b} {
		fields = append(fields, r.Schema().Fields()...)
		cols = append(cols, r.Columns()...)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, max(a.NumRows(), b.NumRows()))
}

// builderBytes is the memory an Arrow builder holds (its capacity) when
// flat: a fixed-width or binary builder; flat is false for the others
// (lists, structs), whose memory the caller estimates.
func builderBytes(b array.Builder) (n int64, flat bool) {
	bitmap := int64(b.Cap()+7) / 8
	switch x := b.(type) {
	case *array.StringBuilder:
		return bitmap + 4*int64(x.Cap()+1) + int64(x.DataCap()), true
	case *array.BinaryBuilder:
		return bitmap + 4*int64(x.Cap()+1) + int64(x.DataCap()), true
	case *array.BooleanBuilder:
		return 2 * bitmap, true
	}
	if fw, ok := b.Type().(arrow.FixedWidthDataType); ok {
		return bitmap + int64(b.Cap())*int64(fw.BitWidth()/8), true
	}
	return 0, false
}

// testHookGroupsHeld, when set, is called when a GROUP BY's scan ends
// (or fails), its groups still held, with what was charged for them.
var testHookGroupsHeld func(charged int64)

// total is what was charged for the groups.
func (g *groupState) total() int64 {
	var n int64
	for _, c := range g.charged {
		n += c
	}
	return n
}
