package rowjson

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit/arrowgen"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestFormats(t *testing.T) {
	bi := func(s string) *big.Int {
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			t.Fatalf("bad int %s", s)
		}
		return v
	}
	for _, tc := range []struct {
		got, want string
	}{
		{string(AppendDate(nil, 0)), "1970-01-01"},
		{string(AppendDate(nil, -719162)), "0001-01-01"},
		{string(AppendDate(nil, 2932896)), "9999-12-31"},
		{string(AppendDate(nil, -1)), "1969-12-31"},
		{string(AppendTime(nil, 0)), "00:00:00"},
		{string(AppendTime(nil, 86399999999)), "23:59:59.999999"},
		{string(AppendTime(nil, 3723000010)), "01:02:03.000010"},
		{string(AppendDatetime(nil, -62135596800000000)), "0001-01-01T00:00:00"},
		{string(AppendDatetime(nil, 253402300799999999)), "9999-12-31T23:59:59.999999"},
		{string(AppendDatetime(nil, -1)), "1969-12-31T23:59:59.999999"},
		{string(AppendTimestampISO(nil, 1500)), "1970-01-01T00:00:00.001500Z"},
		{string(AppendTimestampCell(nil, -62135596800000000, true)), "-62135596800000000"},
		{string(AppendTimestampCell(nil, 0, false)), "0.0"},
		{string(AppendTimestampCell(nil, 1700000000000000, false)), "1.7E9"},
		{string(AppendTimestampCell(nil, 1408452095220000, false)), "1.40845209522E9"},
		{string(AppendTimestampCell(nil, 1000000, false)), "1.0"},
		{string(AppendTimestampCell(nil, 1500, false)), "0.0015"},
		{string(AppendTimestampCell(nil, 1, false)), "1.0E-6"},
		{string(AppendTimestampCell(nil, -1234567, false)), "-1.234567"},
		{string(AppendTimestampCell(nil, 9999999000000, false)), "9999999.0"},
		{string(AppendTimestampCell(nil, 10000000000000, false)), "1.0E7"},
		{string(AppendTimestampCell(nil, -62135596800000000, false)), "-6.21355968E10"},
		{string(AppendTimestampCell(nil, 253402300799999999, false)), "2.53402300799999999E11"},
		{string(AppendTimestampCell(nil, math.MinInt64, false)), "-9.223372036854775808E12"},
		{string(AppendFloat(nil, math.Inf(1))), "Infinity"},
		{string(AppendFloat(nil, math.Inf(-1))), "-Infinity"},
		{string(AppendFloat(nil, math.NaN())), "NaN"},
		{string(AppendFloat(nil, 1.5)), "1.5"},
		{string(AppendFloat(nil, 0)), "0.0"},
		{string(AppendFloat(nil, math.Copysign(0, -1))), "-0.0"},
		{string(AppendFloat(nil, 100)), "100.0"},
		{string(AppendFloat(nil, 1e20)), "1.0E20"},
		{string(AppendFloat(nil, 1e-5)), "1.0E-5"},
		{string(AppendFloat(nil, 0.001)), "0.001"},
		{string(AppendFloat(nil, 1234567.5)), "1234567.5"},
		{string(AppendFloat(nil, 12345678.5)), "1.23456785E7"},
		{string(AppendFloat(nil, -0.1)), "-0.1"},
		{string(AppendFloat(nil, math.MaxFloat64)), "1.7976931348623157E308"},
		{string(AppendFloat(nil, math.SmallestNonzeroFloat64)), "5.0E-324"},
		{string(AppendDecimal(nil, bi("0"), 9)), "0"},
		{string(AppendDecimal(nil, bi("-1500000000"), 9)), "-1.5"},
		{string(AppendDecimal(nil, bi("1"), 9)), "0.000000001"},
		{string(AppendDecimal(nil, bi("-1000"), 9)), "-0.000001"},
		{string(AppendDecimal(nil, bi("123000000000"), 9)), "123"},
		{string(AppendDecimal(nil, bi("99999999999999999999999999999999999999"), 9)), "99999999999999999999999999999.999999999"},
		{string(AppendDecimal(nil, bi("-578960446186580977117854925043439539266349923328202820197287920039565648199"), 38)),
			"-5789604461865809771178549250434395392.66349923328202820197287920039565648199"},
		{string(AppendDecimal(nil, arrowgen.MinBigNumeric, 38)), "-578960446186580977117854925043439539266.34992332820282019728792003956564819968"},
		{string(AppendDecimal(nil, arrowgen.MaxBigNumeric, 38)), "578960446186580977117854925043439539266.34992332820282019728792003956564819967"},
		{string(AppendDecimal(nil, arrowgen.Dec256(arrowgen.MinBigNumeric).BigInt(), 38)), "-578960446186580977117854925043439539266.34992332820282019728792003956564819968"},
		{string(AppendInterval(nil, arrow.MonthDayNanoInterval{})), "0-0 0 0:0:0"},
		{string(AppendInterval(nil, arrow.MonthDayNanoInterval{Months: 14, Days: 3, Nanoseconds: 3723500000000})), "1-2 3 1:2:3.5"},
		{string(AppendInterval(nil, arrow.MonthDayNanoInterval{Months: -5, Days: -3, Nanoseconds: -1000})), "-0-5 -3 -0:0:0.000001"},
		{string(AppendInterval(nil, arrow.MonthDayNanoInterval{Months: 120000, Days: 3660000, Nanoseconds: 316224000000000000})), "10000-0 3660000 87840:0:0"},
		{string(AppendInterval(nil, arrow.MonthDayNanoInterval{Nanoseconds: math.MinInt64})), "0-0 0 -2562047:47:16.854775808"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestLegacyTimestampParses checks that the legacy float form reads back to
// the same microsecond through strconv.ParseFloat (what older clients do)
// within float64 precision.
// TestFloatRoundTrips checks that every float64 form reads back exactly.
func TestFloatRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 0))
	for range 100000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) {
			continue
		}
		s := string(AppendFloat(nil, f))
		g, err := strconv.ParseFloat(s, 64)
		if err != nil || g != f {
			t.Fatalf("%v: %q reads as %v, %v", f, s, g, err)
		}
	}
}

func TestLegacyTimestampParses(t *testing.T) {
	for _, us := range []int64{0, 1, -1, 1700000000123456, -62135596800000000, 253402300799999999, 123456789} {
		s := string(AppendTimestampCell(nil, us, false))
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%d: %q: %v", us, s, err)
		}
		if d := math.Abs(f*1e6 - float64(us)); d > math.Abs(float64(us))*1e-15+1e-9 {
			t.Errorf("%d: %q reads as %v", us, s, f)
		}
	}
}
