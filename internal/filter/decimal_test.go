package filter

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// TestDecimalFastPaths checks the decimal128 comparison and FLOAT64
// conversion loops against big.Rat arithmetic.
func TestDecimalFastPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	randInt := func() *big.Int {
		switch r.IntN(4) {
		case 0:
			return big.NewInt(r.Int64N(2000) - 1000)
		case 1:
			return big.NewInt(r.Int64() - r.Int64())
		default:
			x := new(big.Int).Lsh(big.NewInt(r.Int64()), uint(r.IntN(60)))
			if r.IntN(2) == 0 {
				x.Neg(x)
			}
			return x
		}
	}
	const n = 64
	for iter := 0; iter < 2000; iter++ {
		col := &vec{t: tNumeric, n: n, dscale: 9, d128: make([]decimal128.Num, n)}
		for i := range col.d128 {
			col.d128[i] = decimal128.FromBigInt(randInt())
		}
		kInt := randInt()
		if r.IntN(3) == 0 {
			kInt = col.d128[r.IntN(n)].BigInt()
		}
		k := new(big.Rat).SetFrac(kInt, tenPow9)
		rats := col.rats()
		for op := opEq; op <= opGe; op++ {
			out := make([]bool, n)
			if !decimalFastCmp(op, col, value{r: k}, out) {
				t.Fatalf("fast path refused %s", k.FloatString(9))
			}
			for i := range out {
				if want := op.test(rats[i].Cmp(k)); out[i] != want {
					t.Fatalf("%s %s %s: got %v", rats[i].FloatString(9), cmpOpText[op], k.FloatString(9), out[i])
				}
			}
		}
		cv, err := (&castNode{x: &constNode{v: col}, to: tFloat}).eval(&evalCtx{n: n})
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range cv.f {
			if want, _ := rats[i].Float64(); f != want {
				t.Fatalf("FLOAT64(%s) = %v, want %v", rats[i].FloatString(9), f, want)
			}
		}
	}
}
