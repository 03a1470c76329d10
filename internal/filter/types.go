package filter

import (
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"unsafe"
)

// typ is the GoogleSQL type of a typed expression.
type typ uint16

const (
	tNull typ = iota // the type of an untyped NULL literal
	tBool
	tInt
	tFloat
	tNumeric
	tBigNumeric
	tString
	tBytes
	tDate
	tDatetime
	tTime
	tTimestamp
	tGeo
	tJSON
	tStruct
	tArray
	tInterval
	tRange
)

var typNames = [...]string{
	tNull: "NULL", tBool: "BOOL", tInt: "INT64", tFloat: "FLOAT64", tNumeric: "NUMERIC",
	tBigNumeric: "BIGNUMERIC", tString: "STRING", tBytes: "BYTES", tDate: "DATE",
	tDatetime: "DATETIME", tTime: "TIME", tTimestamp: "TIMESTAMP", tGeo: "GEOGRAPHY",
	tJSON: "JSON", tStruct: "STRUCT", tArray: "ARRAY", tInterval: "INTERVAL", tRange: "RANGE",
}

func (t typ) String() string {
	if c := t.comp(); c != nil {
		return c.name
	}
	return typNames[t]
}

// numRank orders the numeric types by coercion: INT64 -> NUMERIC ->
// BIGNUMERIC -> FLOAT64. 0 for non-numeric types.
func numRank(t typ) int {
	switch t {
	case tInt:
		return 1
	case tNumeric:
		return 2
	case tBigNumeric:
		return 3
	case tFloat:
		return 4
	}
	return 0
}

func isNumeric(t typ) bool { return numRank(t) > 0 }

// isIntLike types are stored in vec.i.
func isIntLike(t typ) bool {
	switch t {
	case tInt, tDate, tDatetime, tTime, tTimestamp:
		return true
	}
	return false
}

func isStrLike(t typ) bool {
	switch t {
	case tString, tBytes, tJSON, tGeo:
		return true
	}
	return false
}

func isDecimal(t typ) bool { return t == tNumeric || t == tBigNumeric }

// castTypes maps the type names accepted by CAST to types.
var castTypes = map[string]typ{
	"INT64": tInt, "INT": tInt, "INTEGER": tInt, "SMALLINT": tInt, "BIGINT": tInt, "TINYINT": tInt, "BYTEINT": tInt,
	"FLOAT64": tFloat, "FLOAT": tFloat, "NUMERIC": tNumeric, "DECIMAL": tNumeric,
	"BIGNUMERIC": tBigNumeric, "BIGDECIMAL": tBigNumeric, "BOOL": tBool, "BOOLEAN": tBool,
	"STRING": tString, "BYTES": tBytes, "DATE": tDate, "DATETIME": tDatetime, "TIME": tTime,
	"TIMESTAMP": tTimestamp, "JSON": tJSON, "GEOGRAPHY": tGeo, "INTERVAL": tInterval,
}

// value is one scalar of some typ (the type is known statically).
type value struct {
	null bool
	i    int64 // INT64; DATE: days since 1970-01-01; DATETIME, TIMESTAMP: µs since epoch; TIME: µs since midnight
	f    float64
	b    bool
	s    string // STRING, BYTES, JSON, GEOGRAPHY (WKT)
	r    *big.Rat
	g    *geometry     // GEOGRAPHY, parsed
	a    []value       // ARRAY: the elements (non-nil when not NULL); STRUCT: the fields
	iv   IntervalValue // INTERVAL
}

var nullValue = value{null: true}

// vec is a column of values: the result of evaluating an expression over a
// batch. konst vectors have one value that stands for every row. Vectors
// that alias Arrow buffers (columns) are never written to.
type vec struct {
	t     typ
	n     int
	konst bool
	nulls []bool // nil: no NULLs
	i     []int64
	f     []float64
	b     []bool
	s     []string
	r     []*big.Rat
	g     []*geometry
	// off and data hold a STRING or BYTES column as Arrow does (s is then
	// materialised on first use by strs).
	off  []int32
	data []byte
	// d128 holds a NUMERIC column as Arrow does, scaled by 10^dscale (r is
	// then materialised on first use by rats).
	d128   []decimal128.Num
	dscale int32
	// c holds the rows of an ARRAY or STRUCT type (composite.go) and of
	// INTERVAL (interval.go).
	c []value
}

// rats returns the decimal values, materialising them from d128.
func (v *vec) rats() []*big.Rat {
	if v.r == nil && v.d128 != nil {
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(v.dscale)), nil)
		v.r = make([]*big.Rat, v.n)
		for i, d := range v.d128 {
			if v.nulls == nil || !v.nulls[i] {
				v.r[i] = new(big.Rat).SetFrac(d.BigInt(), den)
			}
		}
	}
	return v.r
}

// strs returns the string values, materialising them from off and data
// when needed (the strings alias data).
func (v *vec) strs() []string {
	if v.s == nil && v.off != nil {
		v.s = make([]string, v.n)
		for i := range v.s {
			v.s[i] = bytesToString(v.data[v.off[i]:v.off[i+1]])
		}
	}
	return v.s
}

func (v *vec) idx(i int) int {
	if v.konst {
		return 0
	}
	return i
}

func (v *vec) isNull(i int) bool { return v.nulls != nil && v.nulls[v.idx(i)] }

func (v *vec) hasNulls() bool { return v.nulls != nil }

// get returns row i as a value.
func (v *vec) get(i int) value {
	i = v.idx(i)
	if v.nulls != nil && v.nulls[i] {
		return nullValue
	}
	switch {
	case v.t == tBool:
		return value{b: v.b[i]}
	case isIntLike(v.t):
		return value{i: v.i[i]}
	case v.t == tFloat:
		return value{f: v.f[i]}
	case isDecimal(v.t):
		return value{r: v.rats()[i]}
	case v.t == tGeo:
		val := value{s: v.strs()[i]}
		if v.g != nil {
			val.g = v.g[i]
		}
		return val
	case isStrLike(v.t):
		return value{s: v.strs()[i]}
	case v.c != nil:
		return v.c[i]
	}
	return value{}
}

// newVec allocates a vector of n rows of type t with room for NULLs.
func newVec(t typ, n int) *vec {
	v := &vec{t: t, n: n}
	switch {
	case t == tBool:
		v.b = make([]bool, n)
	case isIntLike(t):
		v.i = make([]int64, n)
	case t == tFloat:
		v.f = make([]float64, n)
	case isDecimal(t):
		v.r = make([]*big.Rat, n)
	case t == tGeo:
		v.s = make([]string, n)
		v.g = make([]*geometry, n)
	case isStrLike(t):
		v.s = make([]string, n)
	case t >= tFirstComposite || t == tInterval:
		v.c = make([]value, n)
	}
	return v
}

func (v *vec) set(i int, x value) {
	if x.null {
		if v.nulls == nil {
			v.nulls = make([]bool, v.n)
		}
		v.nulls[i] = true
		return
	}
	switch {
	case v.t == tBool:
		v.b[i] = x.b
	case isIntLike(v.t):
		v.i[i] = x.i
	case v.t == tFloat:
		v.f[i] = x.f
	case isDecimal(v.t):
		v.r[i] = x.r
	case v.t == tGeo:
		v.s[i] = x.s
		v.g[i] = x.g
	case isStrLike(v.t):
		v.s[i] = x.s
	case v.c != nil:
		v.c[i] = x
	}
}

func constVec(t typ, x value) *vec {
	v := newVec(t, 1)
	v.konst = true
	v.set(0, x)
	return v
}

// orNulls returns the NULL mask of rows where any of vs is NULL, nil when
// none is. The result is always freshly allocated.
func orNulls(n int, vs ...*vec) []bool {
	var out []bool
	for _, v := range vs {
		if v.nulls == nil {
			continue
		}
		if v.konst {
			if v.nulls[0] {
				out = make([]bool, n)
				for i := range out {
					out[i] = true
				}
				return out
			}
			continue
		}
		if out == nil {
			out = make([]bool, n)
			copy(out, v.nulls)
			continue
		}
		for i, x := range v.nulls {
			out[i] = out[i] || x
		}
	}
	return out
}

// formatValue renders x of type t for error messages, roughly as
// CAST(x AS STRING) does.
func formatValue(t typ, x value) string {
	if x.null {
		return "NULL"
	}
	s, err := castToString(t, x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return s
}

// bytesToString views b as a string without copying; b must not change.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
