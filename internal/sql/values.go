package sql

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Values are as filter.Scalar.Values returns them: nil (NULL), bool,
// int64, float64, *big.Rat, string, filter.IntervalValue, filter.Range,
// []any (ARRAY) or filter.Struct.

// appendKey appends an encoding of v that is equal for values GROUP BY
// and DISTINCT treat as equal: -0 and +0 are one key, every NaN is one key.
func appendKey(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, 0)
	case bool:
		if x {
			return append(dst, 1, 1)
		}
		return append(dst, 1, 0)
	case int64:
		return binary.BigEndian.AppendUint64(append(dst, 2), uint64(x))
	case float64:
		switch {
		case x == 0:
			x = 0
		case math.IsNaN(x):
			x = math.NaN()
		}
		return binary.BigEndian.AppendUint64(append(dst, 3), math.Float64bits(x))
	case *big.Rat:
		s := x.RatString()
		return append(binary.BigEndian.AppendUint32(append(dst, 4), uint32(len(s))), s...)
	case string:
		return append(binary.BigEndian.AppendUint32(append(dst, 5), uint32(len(x))), x...)
	case filter.IntervalValue:
		// Intervals that compare equal (1 MONTH, 30 DAY) are one group,
		// as in GoogleSQL.
		return binary.BigEndian.AppendUint64(append(dst, 8), uint64(x.Total()))
	case filter.Range:
		return appendKey(appendKey(append(dst, 9), x.Start), x.End)
	}
	return appendCompositeKey(dst, v)
}

// compareValues orders two non-NULL values of one type as ORDER BY does:
// FLOAT64 NaN sorts before every other number; -0 equals +0.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case int64:
		y := b.(int64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case float64:
		y := b.(float64)
		xn, yn := math.IsNaN(x), math.IsNaN(y)
		switch {
		case xn && yn:
			return 0
		case xn:
			return -1
		case yn:
			return 1
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case *big.Rat:
		return x.Cmp(b.(*big.Rat))
	case string:
		return strings.Compare(x, b.(string))
	case filter.Range:
		// By start (unbounded first), then by end (unbounded last).
		y := b.(filter.Range)
		if c := compareBound(x.Start, y.Start, -1); c != 0 {
			return c
		}
		return compareBound(x.End, y.End, 1)
	case filter.IntervalValue:
		y := b.(filter.IntervalValue)
		switch xt, yt := x.Total(), y.Total(); {
		case xt < yt:
			return -1
		case xt > yt:
			return 1
		}
		return 0
	}
	return 0
}

// compareBound orders two bounds of a range, nil (unbounded) standing
// for nilOrder: -1 before every value, 1 after.
func compareBound(a, b any, nilOrder int) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return nilOrder
	case b == nil:
		return -nilOrder
	}
	return compareValues(a, b)
}

// distinct keeps the first of each set of equal rows (over the first n
// columns).
func distinct(rows [][]any, n int) [][]any {
	seen := map[string]bool{}
	out := rows[:0]
	var kb []byte
	for _, r := range rows {
		kb = kb[:0]
		for _, v := range r[:n] {
			kb = appendKey(kb, v)
		}
		if seen[string(kb)] {
			continue
		}
		seen[string(kb)] = true
		out = append(out, r)
	}
	return out
}

// sortRows sorts by the keys, stably: NULLs first in ascending order and
// last in descending order unless NULLS FIRST/LAST says otherwise.
func sortRows(rows [][]any, keys []orderKey) {
	sort.SliceStable(rows, func(i, j int) bool { return compareRows(rows[i], rows[j], keys) < 0 })
}

// compareRows orders two rows by the keys, as sortRows does (0: a tie).
func compareRows(x, y []any, keys []orderKey) int {
	for _, k := range keys {
		a, b := x[k.col], y[k.col]
		var c int
		switch {
		case a == nil && b == nil:
			c = 0
		case a == nil:
			if k.nullsLast {
				return 1
			}
			return -1
		case b == nil:
			if k.nullsLast {
				return -1
			}
			return 1
		default:
			c = compareValues(a, b)
			if k.desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// LogicalBytes is the size of rec's values as BigQuery bills them (a
// dry run sizes the columns a query would read with it).
func LogicalBytes(rec arrow.RecordBatch) int64 { return logicalBytes(rec) }

// logicalBytes is the size of rec's values as BigQuery bills them.
func logicalBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		n += arrayBytes(col)
	}
	return n
}

func arrayBytes(arr arrow.Array) int64 {
	valid := int64(arr.Len() - arr.NullN())
	switch a := arr.(type) {
	case *array.String:
		var n int64
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) {
				n += 2 + int64(len(a.Value(i)))
			}
		}
		return n
	case *array.Binary:
		var n int64
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) {
				n += 2 + int64(len(a.Value(i)))
			}
		}
		return n
	case *array.Boolean:
		return valid
	case *array.Decimal128:
		return 16 * valid
	case *array.Decimal256:
		return 32 * valid
	case *array.MonthDayNanoInterval:
		return 16 * valid
	case *array.Struct:
		var n int64
		for i := 0; i < a.NumField(); i++ {
			n += arrayBytes(a.Field(i))
		}
		return n
	case *array.List:
		return arrayBytes(a.ListValues())
	}
	return 8 * valid
}

// buildRecord builds an Arrow record of s's Arrow mapping with n rows,
// cell (col, row) given by value, for the executor's own relations: a
// NULL ARRAY stays NULL (ARRAY_AGG over no rows IS NULL; ARRAY_LENGTH
// of it is NULL). A result written to a table is built by buildResult.
func buildRecord(s *schema.Schema, n int, value func(col, row int) any) (arrow.RecordBatch, error) {
	return buildArrow(s, n, value, true)
}

// buildResult is buildRecord for a result or rows written to a table:
// BigQuery stores no NULL arrays, so a NULL ARRAY is written empty.
func buildResult(s *schema.Schema, n int, value func(col, row int) any) (arrow.RecordBatch, error) {
	return buildArrow(s, n, value, false)
}

func buildArrow(s *schema.Schema, n int, value func(col, row int) any, nullArrays bool) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema.ToArrow(s))
	defer b.Release()
	for c, fb := range b.Fields() {
		for r := 0; r < n; r++ {
			v := value(c, r)
			if v == nil {
				appendNull(fb, nullArrays)
				continue
			}
			if err := appendValue(fb, v, nullArrays); err != nil {
				var fe *filter.Error
				if err == errColumnTooLarge || errors.As(err, &fe) {
					return nil, err // the user's error, as it is
				}
				return nil, fmt.Errorf("sql: column %s: %w", s.Fields[c].Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// appendNull appends a NULL, or an empty array for a NULL ARRAY unless
// nullArrays.
func appendNull(fb array.Builder, nullArrays bool) {
	if lb, ok := fb.(*array.ListBuilder); ok && !nullArrays {
		lb.Append(true) // no NULL arrays in BigQuery's tables: empty
		return
	}
	fb.AppendNull()
}

// maxColumnBytes is the most a STRING or BYTES column of a batch may
// hold: Arrow's 32-bit offsets (past them the builder panicked). A
// variable for tests.
var maxColumnBytes = math.MaxInt32

// errColumnTooLarge is a batch column past maxColumnBytes.
var errColumnTooLarge = &ResourcesError{Limit: math.MaxInt32, Used: math.MaxInt32, What: "a result column of more than 2 GiB"}

func appendValue(fb array.Builder, v any, nullArrays bool) error {
	switch b := fb.(type) {
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		if b.DataLen()+len(v.(string)) > maxColumnBytes {
			return errColumnTooLarge
		}
		b.Append(v.(string))
	case *array.BinaryBuilder:
		if b.DataLen()+len(v.(string)) > maxColumnBytes {
			return errColumnTooLarge
		}
		b.Append([]byte(v.(string)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int64)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(int64)))
	case *array.Decimal128Builder:
		scale := b.Type().(*arrow.Decimal128Type).Scale
		b.Append(decimal128.FromBigInt(scaled(v.(*big.Rat), scale)))
	case *array.Decimal256Builder:
		scale := b.Type().(*arrow.Decimal256Type).Scale
		b.Append(decimal256.FromBigInt(scaled(v.(*big.Rat), scale)))
	case *array.MonthDayNanoIntervalBuilder:
		iv, ok := v.(filter.IntervalValue)
		if !ok {
			return fmt.Errorf("value %T for an INTERVAL column", v)
		}
		mdn, err := iv.MonthDayNano()
		if err != nil {
			return err
		}
		b.Append(mdn)
	case *array.ListBuilder:
		elems, ok := v.([]any)
		if !ok {
			return fmt.Errorf("value %T for an ARRAY column", v)
		}
		b.Append(true)
		for _, e := range elems {
			if e == nil {
				b.ValueBuilder().AppendNull()
			} else if err := appendValue(b.ValueBuilder(), e, nullArrays); err != nil {
				return err
			}
		}
	case *array.StructBuilder:
		if r, ok := v.(filter.Range); ok {
			v = filter.Struct{r.Start, r.End} // a RANGE column's struct<start, end>
		}
		fields, ok := v.(filter.Struct)
		if !ok || len(fields) != b.NumField() {
			return fmt.Errorf("value %T for a STRUCT column", v)
		}
		b.Append(true)
		for i, e := range fields {
			fb := b.FieldBuilder(i)
			if e == nil {
				appendNull(fb, nullArrays)
			} else if err := appendValue(fb, e, nullArrays); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("no builder for %T", fb)
	}
	return nil
}

// scaled returns r * 10^scale rounded half away from zero.
func scaled(r *big.Rat, scale int32) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	num, den := x.Num(), x.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Sign() != 0 {
		m2 := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
		if m2.Cmp(den) >= 0 {
			if num.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
	}
	return q
}

// Record returns the result's rows as one Arrow record in the Arrow
// mapping of its schema (what rowjson and the Read API encode).
func (r *Result) Record() (arrow.RecordBatch, error) {
	return buildResult(r.Schema, len(r.Rows), func(col, row int) any { return r.Rows[row][col] })
}
