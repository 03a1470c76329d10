package filter

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

type evalCtx struct {
	cx   context.Context // nil: not cancellable (constant folding, Eval)
	rec  arrow.RecordBatch
	n    int
	src  source
	cols map[string]*vec
}

// checkEvery is how many rows a per-row loop evaluates between checks of
// the context: an abandoned read stops within a block, not at the end of
// the batch.
const checkEvery = 256

// check returns the context's error once it is done.
func (ctx *evalCtx) check() error {
	if ctx.cx == nil {
		return nil
	}
	return ctx.cx.Err()
}

func (ctx *evalCtx) errf(pos int, format string, args ...any) *Error {
	return ctx.src.errf(pos, format, args...)
}

// Eval evaluates the filter over rec and returns the selection: a Boolean
// array of rec.NumRows() values without NULLs, true for the rows that
// match (a NULL result excludes the row, as WHERE does). The caller
// releases it. rec must hold the referenced top-level columns (Columns),
// found by name case-insensitively, in the Arrow mapping of the schema.
//
// A runtime error (division by zero, overflow, a failed CAST) fails the
// evaluation with an *Error naming the position of the operation, as a
// BigQuery query fails; the Read API fails the read.
func (f *Filter) Eval(rec arrow.RecordBatch) (*array.Boolean, error) {
	return f.evalBool(nil, rec)
}

// EvalContext is Eval that stops with ctx's error once ctx is done
// (checked every few hundred rows inside the costly operators).
func (f *Filter) EvalContext(cx context.Context, rec arrow.RecordBatch) (*array.Boolean, error) {
	return f.evalBool(cx, rec)
}

func (f *Filter) evalBool(cx context.Context, rec arrow.RecordBatch) (*array.Boolean, error) {
	n := int(rec.NumRows())
	v, err := f.eval(cx, rec)
	if err != nil {
		return nil, err
	}
	buf := memory.NewResizableBuffer(memory.DefaultAllocator)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := buf.Bytes()
	for i := range bits {
		bits[i] = 0
	}
	switch {
	case v.konst:
		if !v.isNull(0) && v.b[0] {
			for i := 0; i < n; i++ {
				bitutil.SetBit(bits, i)
			}
		}
	case v.nulls == nil:
		packBools(bits, v.b[:n])
	default:
		for i, b := range v.b[:n] {
			if b && !v.nulls[i] {
				bitutil.SetBit(bits, i)
			}
		}
	}
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer data.Release()
	buf.Release()
	return array.NewBooleanData(data), nil
}

// Mask is Eval returning the selection as a []bool of rec.NumRows() values.
func (f *Filter) Mask(rec arrow.RecordBatch) ([]bool, error) {
	n := int(rec.NumRows())
	v, err := f.eval(nil, rec)
	if err != nil {
		return nil, err
	}
	out := make([]bool, n)
	if v.konst {
		if !v.isNull(0) && v.b[0] {
			for i := range out {
				out[i] = true
			}
		}
		return out, nil
	}
	copy(out, v.b)
	if v.nulls != nil {
		for i, nl := range v.nulls {
			if nl {
				out[i] = false
			}
		}
	}
	return out, nil
}

func (f *Filter) eval(cx context.Context, rec arrow.RecordBatch) (*vec, error) {
	ctx := &evalCtx{cx: cx, rec: rec, n: int(rec.NumRows()), src: f.src, cols: map[string]*vec{}}
	if err := ctx.check(); err != nil {
		return nil, err
	}
	return f.root.eval(ctx)
}

// colNode reads a column (or a RECORD's field) from the batch.
type colNode struct {
	path []string
	key  string
	t    typ
	p    int
}

func (n *colNode) typ() typ { return n.t }
func (n *colNode) pos() int { return n.p }

func (n *colNode) eval(ctx *evalCtx) (*vec, error) {
	if v, ok := ctx.cols[n.key]; ok {
		return v, nil
	}
	if ctx.rec == nil {
		return nil, ctx.errf(n.p, "column %s referenced without a record", strings.Join(n.path, "."))
	}
	sch := ctx.rec.Schema()
	idx := -1
	for i, f := range sch.Fields() {
		if strings.EqualFold(f.Name, n.path[0]) {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("filter: record has no column %q", n.path[0])
	}
	arr := ctx.rec.Column(idx)
	var parentNulls []bool
	for _, name := range n.path[1:] {
		st, ok := arr.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("filter: column %s is %s in the record, not a struct", strings.Join(n.path, "."), arr.DataType())
		}
		parentNulls = mergeValidity(parentNulls, arr)
		stt := st.DataType().(*arrow.StructType)
		fi := -1
		for i, f := range stt.Fields() {
			if strings.EqualFold(f.Name, name) {
				fi = i
				break
			}
		}
		if fi < 0 {
			return nil, fmt.Errorf("filter: record has no field %q in %s", name, strings.Join(n.path, "."))
		}
		arr = st.Field(fi)
	}
	v, err := loadArray(arr, n.t, ctx.n)
	if err != nil {
		return nil, fmt.Errorf("filter: column %s: %w", strings.Join(n.path, "."), err)
	}
	if parentNulls != nil {
		if v.nulls == nil {
			v.nulls = parentNulls
		} else {
			nl := make([]bool, ctx.n)
			for i := range nl {
				nl[i] = v.nulls[i] || parentNulls[i]
			}
			v.nulls = nl
		}
	}
	ctx.cols[n.key] = v
	return v, nil
}

func mergeValidity(nulls []bool, arr arrow.Array) []bool {
	if arr.NullN() == 0 {
		return nulls
	}
	if nulls == nil {
		nulls = make([]bool, arr.Len())
	} else {
		nulls = append([]bool(nil), nulls...)
	}
	for i := range nulls {
		if arr.IsNull(i) {
			nulls[i] = true
		}
	}
	return nulls
}

// loadArray views an Arrow array as a vec of type t. Fixed-width values
// alias the Arrow buffers; strings alias the data buffer.
func loadArray(arr arrow.Array, t typ, n int) (*vec, error) {
	if arr.Len() != n {
		return nil, fmt.Errorf("has %d values for %d rows", arr.Len(), n)
	}
	v := &vec{t: t, n: n}
	if n == 0 {
		return newVec(t, 0), nil
	}
	v.nulls = mergeValidity(nil, arr)
	mismatch := func() (*vec, error) {
		return nil, fmt.Errorf("arrow type %s does not hold %s", arr.DataType(), t)
	}
	switch t {
	case tInt:
		a, ok := arr.(*array.Int64)
		if !ok {
			return mismatch()
		}
		v.i = a.Int64Values()
	case tFloat:
		a, ok := arr.(*array.Float64)
		if !ok {
			return mismatch()
		}
		v.f = a.Float64Values()
	case tBool:
		a, ok := arr.(*array.Boolean)
		if !ok {
			return mismatch()
		}
		v.b = make([]bool, n)
		for i := range v.b {
			v.b[i] = a.Value(i)
		}
	case tString, tJSON, tGeo, tBytes:
		switch a := arr.(type) {
		case *array.String:
			v.off = a.ValueOffsets()[:n+1]
			v.data = a.ValueBytes()
			if len(v.off) > 0 && v.off[0] != 0 {
				// ValueBytes starts at the first value of a slice.
				v.data = a.Data().Buffers()[2].Bytes()
			}
		case *array.Binary:
			v.off = a.ValueOffsets()[:n+1]
			v.data = a.Data().Buffers()[2].Bytes()
		}
		if v.off != nil {
			if t == tGeo {
				v.g = make([]*geometry, n)
			}
			break
		}
		v.s = make([]string, n)
		switch a := arr.(type) {
		case *array.LargeString:
			for i := range v.s {
				v.s[i] = a.Value(i)
			}
		case *array.LargeBinary:
			for i := range v.s {
				v.s[i] = string(a.Value(i))
			}
		default:
			return mismatch()
		}
		if t == tGeo {
			v.g = make([]*geometry, n)
		}
	case tNumeric, tBigNumeric:
		switch a := arr.(type) {
		case *array.Decimal128:
			v.d128 = a.Values()[:n]
			v.dscale = a.DataType().(*arrow.Decimal128Type).Scale
		case *array.Decimal256:
			v.r = make([]*big.Rat, n)
			den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(a.DataType().(*arrow.Decimal256Type).Scale)), nil)
			for i := range v.r {
				if !a.IsNull(i) {
					v.r[i] = new(big.Rat).SetFrac(a.Value(i).BigInt(), den)
				}
			}
		default:
			return mismatch()
		}
	case tDate:
		a, ok := arr.(*array.Date32)
		if !ok {
			return mismatch()
		}
		v.i = make([]int64, n)
		for i, d := range a.Date32Values() {
			v.i[i] = int64(d)
		}
	case tTimestamp, tDatetime:
		a, ok := arr.(*array.Timestamp)
		if !ok {
			return mismatch()
		}
		raw := a.TimestampValues()
		unit := a.DataType().(*arrow.TimestampType).Unit
		v.i = scaleTimes(raw, unit)
	case tTime:
		switch a := arr.(type) {
		case *array.Time64:
			v.i = scaleTimes(a.Time64Values(), a.DataType().(*arrow.Time64Type).Unit)
		default:
			return mismatch()
		}
	case tInterval:
		a, ok := arr.(*array.MonthDayNanoInterval)
		if !ok {
			return mismatch()
		}
		v.c = make([]value, n)
		for i := range v.c {
			if a.IsValid(i) {
				iv, err := intervalOfMDN(a.Value(i))
				if err != nil {
					return nil, err
				}
				v.c[i] = value{iv: iv}
			}
		}
	default:
		if t >= tFirstComposite {
			c, err := loadComposite(arr, t)
			if err != nil {
				return nil, err
			}
			v.c = c
		}
		// Bare STRUCT, RANGE, INTERVAL (row_restriction): only their
		// validity is used (IS NULL).
	}
	return v, nil
}

func scaleTimes[T ~int64](raw []T, unit arrow.TimeUnit) []int64 {
	if unit == arrow.Microsecond {
		return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw))
	}
	out := make([]int64, len(raw))
	switch unit {
	case arrow.Second:
		for i, x := range raw {
			out[i] = int64(x) * 1_000_000
		}
	case arrow.Millisecond:
		for i, x := range raw {
			out[i] = int64(x) * 1000
		}
	case arrow.Nanosecond:
		for i, x := range raw {
			out[i] = floorDiv(int64(x), 1000)
		}
	}
	return out
}

// ---- comparisons ----

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var cmpOps = map[string]cmpOp{"=": opEq, "!=": opNe, "<>": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe}

var cmpOpText = [...]string{"=", "!=", "<", "<=", ">", ">="}

// flip returns the operator with its operands swapped: a < b == b > a.
func (o cmpOp) flip() cmpOp {
	switch o {
	case opLt:
		return opGt
	case opLe:
		return opGe
	case opGt:
		return opLt
	case opGe:
		return opLe
	}
	return o
}

func (o cmpOp) test(c int) bool {
	switch o {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	}
	return c >= 0
}

type cmpNode struct {
	op   cmpOp
	l, r node
	p    int
}

func (n *cmpNode) typ() typ { return tBool }
func (n *cmpNode) pos() int { return n.p }

func (n *cmpNode) eval(ctx *evalCtx) (*vec, error) {
	l, err := n.l.eval(ctx)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, ctx.n)
	out.nulls = orNulls(ctx.n, l, r)
	t := l.t
	switch {
	case isIntLike(t):
		cmpOrdered(n.op, l.i, l.konst, r.i, r.konst, out.b)
	case t == tFloat:
		cmpOrdered(n.op, l.f, l.konst, r.f, r.konst, out.b)
	case t == tString || t == tBytes:
		switch {
		case l.off != nil && r.konst:
			cmpStrCol(n.op, l.off, l.data, r.s[0], out.b)
		case r.off != nil && l.konst:
			cmpStrCol(n.op.flip(), r.off, r.data, l.s[0], out.b)
		default:
			cmpOrdered(n.op, l.strs(), l.konst, r.strs(), r.konst, out.b)
		}
	case l.d128 != nil && r.konst && decimalFastCmp(n.op, l, r.get(0), out.b):
	case r.d128 != nil && l.konst && decimalFastCmp(n.op.flip(), r, l.get(0), out.b):
	default:
		for i := range out.b {
			if out.nulls != nil && out.nulls[i] {
				continue
			}
			out.b[i] = n.op.test(compareValues(t, l.get(i), r.get(i)))
		}
	}
	return out, nil
}

// decimalFastCmp compares a decimal128 column with a constant without
// leaving 128-bit integers; false when the constant has no exact
// representation at the column's scale (the caller takes the slow path).
func decimalFastCmp(op cmpOp, col *vec, c value, out []bool) bool {
	if c.null {
		return true // every row is NULL; the mask hides out
	}
	scaled := new(big.Rat).Mul(c.r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(col.dscale)), nil)))
	if !scaled.IsInt() || scaled.Num().BitLen() > 126 {
		return false
	}
	k := decimal128.FromBigInt(scaled.Num())
	khi, klo := k.HighBits(), k.LowBits()
	for i, d := range col.d128[:len(out)] {
		hi, lo := d.HighBits(), d.LowBits()
		c := 0
		switch {
		case hi < khi:
			c = -1
		case hi > khi:
			c = 1
		case lo < klo:
			c = -1
		case lo > klo:
			c = 1
		}
		out[i] = op.test(c)
	}
	return true
}

// compareValues orders two non-NULL values of type t.
func compareValues(t typ, a, b value) int {
	switch {
	case t == tBool:
		switch {
		case a.b == b.b:
			return 0
		case !a.b:
			return -1
		}
		return 1
	case isIntLike(t):
		return cmp.Compare(a.i, b.i)
	case t == tFloat:
		if math.IsNaN(a.f) || math.IsNaN(b.f) {
			// The ordering (grouping, pruning, MIN/MAX): NaN first and
			// equal to NaN. SQL = and < on NaN are false: equalSQL.
			if math.IsNaN(a.f) && math.IsNaN(b.f) {
				return 0
			}
			if math.IsNaN(a.f) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.f, b.f)
	case isDecimal(t):
		return a.r.Cmp(b.r)
	case t == tInterval:
		return cmp.Compare(a.iv.Total(), b.iv.Total())
	case t.isRange():
		// By start, then end; an unbounded (NULL) start is the lowest,
		// an unbounded end the highest, as ZetaSQL orders ranges.
		if c := compareBound(t.elem(), a.a[0], b.a[0], -1); c != 0 {
			return c
		}
		return compareBound(t.elem(), a.a[1], b.a[1], 1)
	}
	return strings.Compare(a.s, b.s)
}

// compareBound orders two RANGE bounds of type t, an unbounded (NULL)
// one standing for open: -1 below every value, 1 above.
func compareBound(t typ, a, b value, open int) int {
	switch {
	case a.null && b.null:
		return 0
	case a.null:
		return open
	case b.null:
		return -open
	}
	return compareValues(t, a, b)
}

// cmpOrdered compares a and b element-wise (a konst operand broadcasts)
// into out. NULL rows get an arbitrary value; the caller masks them.
func cmpOrdered[T cmp.Ordered](op cmpOp, a []T, ak bool, b []T, bk bool, out []bool) {
	if ak && !bk {
		a, b, op = b, a, op.flip()
		ak, bk = bk, ak
	}
	if bk {
		c := b[0]
		if ak {
			out[0] = cmpScalar(op, a[0], c)
			for i := 1; i < len(out); i++ {
				out[i] = out[0]
			}
			return
		}
		a = a[:len(out)]
		switch op {
		case opEq:
			for i, x := range a {
				out[i] = x == c
			}
		case opNe:
			for i, x := range a {
				out[i] = x != c
			}
		case opLt:
			for i, x := range a {
				out[i] = x < c
			}
		case opLe:
			for i, x := range a {
				out[i] = x <= c
			}
		case opGt:
			for i, x := range a {
				out[i] = x > c
			}
		case opGe:
			for i, x := range a {
				out[i] = x >= c
			}
		}
		return
	}
	a, b = a[:len(out)], b[:len(out)]
	switch op {
	case opEq:
		for i := range out {
			out[i] = a[i] == b[i]
		}
	case opNe:
		for i := range out {
			out[i] = a[i] != b[i]
		}
	case opLt:
		for i := range out {
			out[i] = a[i] < b[i]
		}
	case opLe:
		for i := range out {
			out[i] = a[i] <= b[i]
		}
	case opGt:
		for i := range out {
			out[i] = a[i] > b[i]
		}
	case opGe:
		for i := range out {
			out[i] = a[i] >= b[i]
		}
	}
}

func cmpScalar[T cmp.Ordered](op cmpOp, x, c T) bool {
	switch op {
	case opEq:
		return x == c
	case opNe:
		return x != c
	case opLt:
		return x < c
	case opLe:
		return x <= c
	case opGt:
		return x > c
	}
	return x >= c
}

// ---- logic (Kleene three-valued) ----

type logicNode struct {
	and  bool
	l, r node
	p    int
}

func (n *logicNode) typ() typ { return tBool }
func (n *logicNode) pos() int { return n.p }

func (n *logicNode) eval(ctx *evalCtx) (*vec, error) {
	l, err := n.l.eval(ctx)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(ctx)
	if err != nil {
		if r, err = n.evalUndecided(ctx, l, err); err != nil {
			return nil, err
		}
	}
	out := newVec(tBool, ctx.n)
	if l.nulls == nil && r.nulls == nil && !l.konst && !r.konst {
		andOrBools(n.and, out.b, l.b, r.b)
		return out, nil
	}
	// dominant is the value that decides the result whatever the other
	// operand: FALSE for AND, TRUE for OR.
	dom := !n.and
	for i := range out.b {
		ln, rn := l.isNull(i), r.isNull(i)
		lv, rv := l.b[l.idx(i)], r.b[r.idx(i)]
		switch {
		case (!ln && lv == dom) || (!rn && rv == dom):
			out.b[i] = dom
		case ln || rn:
			if out.nulls == nil {
				out.nulls = make([]bool, ctx.n)
			}
			out.nulls[i] = true
		default:
			out.b[i] = !dom
		}
	}
	return out, nil
}

// evalUndecided re-evaluates the right operand, which failed with err over
// the whole batch, on the rows the left operand does not decide (not FALSE
// for AND, not TRUE for OR), so that "x != 0 AND 1 / x > 0" does not fail
// on the rows where x = 0. BigQuery does not promise an evaluation order;
// this makes the guard idiom work as users expect. The other rows of the
// result are never read.
func (n *logicNode) evalUndecided(ctx *evalCtx, l *vec, err error) (*vec, error) {
	if l.konst {
		return nil, err
	}
	dom := !n.and
	keep := make([]bool, ctx.n)
	for i := range keep {
		keep[i] = l.isNull(i) || l.b[i] != dom
	}
	return evalSubset(ctx, n.r, keep, err)
}

type notNode struct {
	x node
	p int
}

func (n *notNode) typ() typ { return tBool }
func (n *notNode) pos() int { return n.p }

func (n *notNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, x.n)
	out.konst = x.konst
	for i, b := range x.b {
		out.b[i] = !b
	}
	if x.nulls != nil {
		out.nulls = append([]bool(nil), x.nulls...)
	}
	return out, nil
}

type isNode struct {
	x    node
	not  bool
	what string
	p    int
}

func (n *isNode) typ() typ { return tBool }
func (n *isNode) pos() int { return n.p }

func (n *isNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(tBool, x.n)
	out.konst = x.konst
	for i := range out.b {
		nl := x.nulls != nil && x.nulls[i]
		var r bool
		switch n.what {
		case "NULL":
			r = nl
		case "TRUE":
			r = !nl && x.b[i]
		default:
			r = !nl && !x.b[i]
		}
		out.b[i] = r != n.not
	}
	return out, nil
}

// cmpStrCol compares the strings of an Arrow offsets/data column with c.
func cmpStrCol(op cmpOp, off []int32, data []byte, c string, out []bool) {
	switch op {
	case opEq, opNe:
		want := op == opEq
		for i := range out {
			a, b := off[i], off[i+1]
			out[i] = (int(b-a) == len(c) && string(data[a:b]) == c) == want
		}
	default:
		for i := range out {
			out[i] = op.test(strings.Compare(bytesToString(data[off[i]:off[i+1]]), c))
		}
	}
}

// andOrBools computes out = a AND b (or a OR b) eight bools at a time; Go
// stores bools as bytes 0 or 1, so bytewise & and | are exact.
func andOrBools(and bool, out, a, b []bool) {
	n := len(out)
	o := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), n)
	x := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), n)
	y := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), n)
	i := 0
	for ; i+8 <= n; i += 8 {
		u := binary.LittleEndian.Uint64(x[i:])
		v := binary.LittleEndian.Uint64(y[i:])
		if and {
			binary.LittleEndian.PutUint64(o[i:], u&v)
		} else {
			binary.LittleEndian.PutUint64(o[i:], u|v)
		}
	}
	for ; i < n; i++ {
		if and {
			o[i] = x[i] & y[i]
		} else {
			o[i] = x[i] | y[i]
		}
	}
}

// packBools sets bit i of bits for every true b[i]; bits starts zeroed.
func packBools(bits []byte, b []bool) {
	x := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
	i := 0
	for ; i+8 <= len(x); i += 8 {
		u := binary.LittleEndian.Uint64(x[i:])
		// Gather the low bit of each byte into one byte.
		bits[i/8] = byte((u * 0x0102040810204080) >> 56)
	}
	for ; i < len(x); i++ {
		if x[i] != 0 {
			bitutil.SetBit(bits, i)
		}
	}
}

// Apply returns the rows of rec the filter selects, as a new batch that
// the caller releases (rec itself, retained, when every row matches).
func (f *Filter) Apply(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	sel, err := f.EvalContext(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer sel.Release()
	bits := sel.Data().Buffers()[1].Bytes()
	if bitutil.CountSetBits(bits, 0, sel.Len()) == sel.Len() {
		rec.Retain()
		return rec, nil
	}
	return compute.FilterRecordBatch(ctx, rec, sel, compute.DefaultFilterOptions())
}

// fastArith computes INT64 and FLOAT64 arithmetic with typed loops. A
// konst operand is read at index i&0. It returns false when some non-NULL
// row fails (overflow, division by zero), leaving the caller to report it.
func fastArith(op byte, l, r, out *vec) bool {
	lm, rm := -1, -1
	if l.konst {
		lm = 0
	}
	if r.konst {
		rm = 0
	}
	nulls := out.nulls
	bad := false
	if out.t == tInt {
		a, b, z := l.i, r.i, out.i
		switch op {
		case '+':
			for i := range z {
				x, y := a[i&lm], b[i&rm]
				s := x + y
				z[i] = s
				if (s^x)&(s^y) < 0 && (nulls == nil || !nulls[i]) {
					bad = true
				}
			}
		case '-':
			for i := range z {
				x, y := a[i&lm], b[i&rm]
				s := x - y
				z[i] = s
				if (x^y)&(s^x) < 0 && (nulls == nil || !nulls[i]) {
					bad = true
				}
			}
		case '*':
			for i := range z {
				x, y := a[i&lm], b[i&rm]
				hi, lo := bits.Mul64(uint64(abs64(x)), uint64(abs64(y)))
				z[i] = x * y
				if (hi != 0 || lo > math.MaxInt64 || x == math.MinInt64 || y == math.MinInt64) && x != 0 && y != 0 && (nulls == nil || !nulls[i]) {
					// Exact check for the edge cases in arith.
					if _, err := arith('*', tInt, value{i: x}, value{i: y}); err != nil {
						bad = true
					}
				}
			}
		default:
			return false
		}
		return !bad
	}
	a, b, z := l.f, r.f, out.f
	for i := range z {
		x, y := a[i&lm], b[i&rm]
		var s float64
		switch op {
		case '+':
			s = x + y
		case '-':
			s = x - y
		case '*':
			s = x * y
		default:
			s = x / y
			if y == 0 && (nulls == nil || !nulls[i]) {
				bad = true
			}
		}
		z[i] = s
		if math.IsInf(s, 0) || math.IsNaN(s) {
			if !math.IsInf(x, 0) && !math.IsNaN(x) && !math.IsInf(y, 0) && !math.IsNaN(y) && (nulls == nil || !nulls[i]) {
				bad = true
			}
		}
	}
	return !bad
}
