package filter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/schema"
)

// pruneBatch is a random batch of the pruning test's table (i INTEGER,
// f FLOAT, s STRING, d DATE, b BOOLEAN) with its zone maps.
type pruneBatch struct {
	rec   arrow.RecordBatch
	stats map[string]ColumnStats
}

func randomBatch(r *rand.Rand) pruneBatch {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer rb.Release()
	n := r.IntN(6) // includes empty batches
	nullP := []float64{0, 0.3, 1}[r.IntN(3)]
	lo := int64(r.IntN(20)) - 10
	width := int64(r.IntN(6))
	st := map[string]ColumnStats{}
	type mm struct {
		min, max any
		has      bool
		nulls    int64
	}
	acc := map[string]*mm{"i": {}, "f": {}, "s": {}, "d": {}, "b": {}}
	upd := func(c string, v any, less func(a, b any) bool) {
		m := acc[c]
		if !m.has {
			m.min, m.max, m.has = v, v, true
			return
		}
		if less(v, m.min) {
			m.min = v
		}
		if less(m.max, v) {
			m.max = v
		}
	}
	for k := 0; k < n; k++ {
		null := func(c string) bool {
			if r.Float64() < nullP {
				acc[c].nulls++
				return true
			}
			return false
		}
		x := lo + r.Int64N(width+1)
		if null("i") {
			rb.Field(0).AppendNull()
		} else {
			rb.Field(0).(*array.Int64Builder).Append(x)
			upd("i", x, func(a, b any) bool { return a.(int64) < b.(int64) })
		}
		fv := float64(x) / 2
		if r.IntN(10) == 0 {
			fv = math.NaN()
		}
		if null("f") {
			rb.Field(1).AppendNull()
		} else {
			rb.Field(1).(*array.Float64Builder).Append(fv)
			if !math.IsNaN(fv) {
				upd("f", fv, func(a, b any) bool { return a.(float64) < b.(float64) })
			}
		}
		sv := []string{"", "a", "ab", "abc", "b", "ba", "c", "é"}[r.IntN(8)]
		if null("s") {
			rb.Field(2).AppendNull()
		} else {
			rb.Field(2).(*array.StringBuilder).Append(sv)
			upd("s", sv, func(a, b any) bool { return a.(string) < b.(string) })
		}
		if null("d") {
			rb.Field(3).AppendNull()
		} else {
			rb.Field(3).(*array.Date32Builder).Append(arrow.Date32(x))
			upd("d", arrow.Date32(x), func(a, b any) bool { return a.(arrow.Date32) < b.(arrow.Date32) })
		}
		bv := x%2 == 0
		if null("b") {
			rb.Field(4).AppendNull()
		} else {
			rb.Field(4).(*array.BooleanBuilder).Append(bv)
			upd("b", bv, func(a, b any) bool { return !a.(bool) && b.(bool) })
		}
	}
	for c, m := range acc {
		st[c] = ColumnStats{RowCount: int64(n), NullCount: m.nulls, HasMinMax: m.has, Min: m.min, Max: m.max}
	}
	return pruneBatch{rec: rb.NewRecordBatch(), stats: st}
}

// randomPredicate builds a random boolean expression over the table.
func randomPredicate(r *rand.Rand, depth int) string {
	ops := []string{"=", "!=", "<", "<=", ">", ">="}
	op := ops[r.IntN(len(ops))]
	num := func() string { return fmt.Sprint(r.IntN(24) - 12) }
	str := func() string { return []string{"''", "'a'", "'ab'", "'b'", "'bb'", "'c'", "'é'", "'z'"}[r.IntN(8)] }
	if depth > 0 && r.IntN(3) == 0 {
		a, b := randomPredicate(r, depth-1), randomPredicate(r, depth-1)
		switch r.IntN(4) {
		case 0:
			return "(" + a + " AND " + b + ")"
		case 1:
			return "(" + a + " OR " + b + ")"
		case 2:
			return "NOT (" + a + ")"
		default:
			return "(" + a + ") IS " + []string{"TRUE", "NOT TRUE", "FALSE", "NOT FALSE", "NULL", "NOT NULL"}[r.IntN(6)]
		}
	}
	switch r.IntN(14) {
	case 0:
		return "i " + op + " " + num()
	case 1:
		return num() + " " + op + " i"
	case 2:
		return "f " + op + " " + num() + ".5"
	case 3:
		return "i " + op + " " + num() + ".5" // INT64 widened to FLOAT64
	case 4:
		return "s " + op + " " + str()
	case 5:
		return "d " + op + " DATE_FROM_UNIX_DATE(" + num() + ")"
	case 6:
		return "b " + op + " " + []string{"TRUE", "FALSE"}[r.IntN(2)]
	case 7:
		return "i BETWEEN " + num() + " AND " + num()
	case 8:
		not := []string{"", "NOT "}[r.IntN(2)]
		return "i " + not + "IN (" + num() + ", " + num() + []string{"", ", NULL"}[r.IntN(2)] + ")"
	case 9:
		not := []string{"", "NOT "}[r.IntN(2)]
		if r.IntN(3) == 0 {
			return not + "STARTS_WITH(s, " + str() + ")"
		}
		return "s " + not + "LIKE " + []string{"'a%'", "'ab%'", "'%b'", "'b_'", "'é%'", "'%'", "''"}[r.IntN(7)]
	case 10:
		c := []string{"i", "f", "s", "d", "b"}[r.IntN(5)]
		return c + " IS " + []string{"", "NOT "}[r.IntN(2)] + "NULL"
	case 11:
		return "i + 1 " + op + " " + num() // not prunable: must stay conservative
	case 12:
		return "i " + op + " NULL"
	default:
		return "f IN (" + num() + ".5, 1.5)"
	}
}

// TestMayMatchIsConservative checks on random batches and predicates that
// MayMatch never rules out a batch in which Eval selects a row.
func TestMayMatchIsConservative(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sch := &schema.Schema{Fields: []*schema.Field{
		{Name: "i", Type: schema.Integer}, {Name: "f", Type: schema.Float},
		{Name: "s", Type: schema.String}, {Name: "d", Type: schema.Date}, {Name: "b", Type: schema.Boolean},
	}}
	pruned, selected := 0, 0
	for iter := 0; iter < 4000; iter++ {
		b := randomBatch(r)
		expr := randomPredicate(r, 2)
		f, err := Compile(expr, sch)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		mask, err := f.Mask(b.rec)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		any := false
		for _, m := range mask {
			any = any || m
		}
		may := f.MayMatch(func(path []string) (ColumnStats, bool) {
			s, ok := b.stats[strings.ToLower(path[0])]
			return s, ok
		})
		if any && !may {
			t.Fatalf("MayMatch false for %q but rows %v match; stats %+v", expr, mask, b.stats)
		}
		if !may {
			pruned++
		}
		if any {
			selected++
		}
		b.rec.Release()
	}
	// The test is only meaningful if pruning happens and rows do match.
	if pruned < 500 || selected < 500 {
		t.Fatalf("pruned %d and selected %d of 4000 batches: the generator does not exercise pruning", pruned, selected)
	}
	t.Logf("pruned %d of 4000 random batches; %d had matching rows", pruned, selected)
}

func TestMayMatchCases(t *testing.T) {
	sch := &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer}, {Name: "s", Type: schema.String}}}
	stats := func(path []string) (ColumnStats, bool) {
		switch path[0] {
		case "x":
			return ColumnStats{RowCount: 10, NullCount: 2, HasMinMax: true, Min: int64(10), Max: int64(20)}, true
		case "s":
			return ColumnStats{RowCount: 10, HasMinMax: true, Min: "bar", Max: "foo"}, true
		}
		return ColumnStats{}, false
	}
	for expr, want := range map[string]bool{
		"x > 20": false, "x >= 20": true, "x < 10": false, "x = 15": true, "x = 21": false,
		"x IS NULL": true, "x IS NOT NULL": true, "x != 10": true, "NOT x > 5": false,
		"x BETWEEN 21 AND 30": false, "x IN (1, 2, 30)": false, "x IN (1, 12)": true,
		"s LIKE 'g%'": false, "s LIKE 'c%'": true, "s LIKE 'fz%'": false, "s LIKE 'ba%'": true,
		"s = 'zzz' OR x = 1": false, "s = 'zzz' OR x = 11": true, "x + 0 > 100": true,
		"(x > 100) IS NULL": true, "(x > 100) IS TRUE": false, "FALSE": false, "NULL": false,
		"STARTS_WITH(s, 'g')": false, "STARTS_WITH(s, 'ca')": true, "NOT STARTS_WITH(s, 'g')": true,
	} {
		f, err := Compile(expr, sch)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.MayMatch(stats); got != want {
			t.Errorf("MayMatch(%s) = %v, want %v", expr, got, want)
		}
	}
}
