package protorows

import (
	"testing"
)

func TestParseTimestamp(t *testing.T) {
	cases := map[string]int64{
		"1970-01-01":                              0,
		"1970-01-01 00:00:01":                     1000000,
		"1970-01-01T00:00:00.5Z":                  500000,
		"1970-01-01 01:00:00+01":                  0,
		"1970-01-01 05:30:00+0530":                0,
		"1969-12-31 19:00:00-05:00":               0,
		"1970-01-01 00:00:00 UTC":                 0,
		"1969-12-31 16:00:00 America/Los_Angeles": 0,
		"0001-01-01 00:00:00":                     MinMicros,
		"9999-12-31 23:59:59.999999":              MaxMicros,
	}
	for in, want := range cases {
		got, err := ParseTimestamp(in)
		if err != nil || got != want {
			t.Errorf("ParseTimestamp(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1970-01-01 25:00:00", "1970-13-01", "1970-01-01 00:00:00.1234567",
		"1970-01-01 00:00:00 Mars/Base", "9999-12-31 23:59:59.999999-01:00", "1970-01-01 00:00:00+1" + "5:00", "1970-01-01x"} {
		if v, err := ParseTimestamp(bad); err == nil {
			t.Errorf("ParseTimestamp(%q) = %d, want an error", bad, v)
		}
	}
}

func TestPackedCivil(t *testing.T) {
	for _, us := range []int64{MinMicros, 0, 1, 86399999999, MaxMicros, 1700000000123456} {
		got, err := DecodePackedDatetime(EncodePackedDatetime(us))
		if err != nil || got != us {
			t.Errorf("datetime %d: %d, %v", us, got, err)
		}
	}
	for _, us := range []int64{0, 1, 86399999999, 45296000789} {
		got, err := DecodePackedTime(EncodePackedTime(us))
		if err != nil || got != us {
			t.Errorf("time %d: %d, %v", us, got, err)
		}
	}
	// Invalid fields: hour 24, month 13, 30 February, bits above the year.
	for _, v := range []int64{24 << 32, 2024<<46 | 13<<42 | 1<<37, 2024<<46 | 2<<42 | 30<<37, 1 << 61, -1} {
		if _, err := DecodePackedDatetime(v); err == nil {
			t.Errorf("DecodePackedDatetime(%#x) accepted", v)
		}
	}
	if _, err := DecodePackedTime(1 << 40); err == nil {
		t.Error("DecodePackedTime accepted high bits")
	}
}

func TestParseDecimal(t *testing.T) {
	ok := map[string]string{
		"0": "0", "-0.5": "-0.5", "1e3": "1000", "1.2300": "1.23", ".5": "0.5", "+7.": "7",
		"99999999999999999999999999999.999999999":  "99999999999999999999999999999.999999999",
		"-99999999999999999999999999999.999999999": "-99999999999999999999999999999.999999999",
		"1.5000000000000e-3":                       "0.0015",
	}
	for in, want := range ok {
		v, err := ParseNumeric(in)
		if err != nil || scaledString(v.BigInt(), NumericScale) != want {
			t.Errorf("ParseNumeric(%q) = %s, %v; want %s", in, scaledString(v.BigInt(), NumericScale), err, want)
		}
	}
	for _, bad := range []string{"", "-", "1.2.3", "1e", "abc", "1e40", "100000000000000000000000000000", "0.0000000001", "NaN"} {
		if _, err := ParseNumeric(bad); err == nil {
			t.Errorf("ParseNumeric(%q) accepted", bad)
		}
	}
	if _, err := NumericFromBytes(NumericBytes(numericLimit)); err == nil {
		t.Error("10^38 scaled accepted as NUMERIC")
	}
	if v, err := NumericFromFloat(1e-10); err != nil || v.BigInt().Sign() != 0 {
		t.Errorf("1e-10 rounds to 0 at scale 9: %v %v", v.BigInt(), err)
	}
}

func TestParseGeography(t *testing.T) {
	ok := map[string]string{
		"point(1 2)":                           "POINT(1 2)",
		"POINT EMPTY":                          "GEOMETRYCOLLECTION EMPTY",
		"MULTIPOINT(1 2,3 4)":                  "MULTIPOINT(1 2, 3 4)",
		"MULTILINESTRING((0 0,1 1),(2 2,3 3))": "MULTILINESTRING((0 0, 1 1), (2 2, 3 3))",
		"MULTIPOLYGON(((0 0,1 0,1 1,0 0)))":    "MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)))",
		"GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1))":                              "GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1))",
		`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]}`:               "MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)))",
		`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]}`: "GEOMETRYCOLLECTION(POINT(1 2))",
	}
	for in, want := range ok {
		got, err := ParseGeography(in)
		if err != nil || got != want {
			t.Errorf("ParseGeography(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "POINT(1)", "POINT(1 2 3)", "LINESTRING(0 0)", "POINT(0 91)", "CIRCLE(1 2)",
		"POINT(1 2) x", `{"type":"Point","coordinates":[1]}`, `{"type":"Feature"}`, "POLYGON((0 0, 1 0, 1 1, 0 1))"} {
		if got, err := ParseGeography(bad); err == nil {
			t.Errorf("ParseGeography(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseInterval(t *testing.T) {
	ok := map[string][3]int64{
		"1-2 3 4:5:6.5":  {14, 3, 14706500000000},
		"-1-2 -3 -4:5:6": {-14, -3, -14706000000000},
		"0-0 0 0:0:0":    {0, 0, 0},
		"10:00:00":       {0, 0, 36000e9},
		"5 0:0:1":        {0, 5, 1e9},
		"P1W":            {0, 7, 0},
		"-PT1.5S":        {0, 0, -1500000000},
	}
	for in, w := range ok {
		v, err := ParseInterval(in)
		if err != nil || int64(v.Months) != w[0] || int64(v.Days) != w[1] || v.Nanoseconds != w[2] {
			t.Errorf("ParseInterval(%q) = %+v, %v; want %v", in, v, err, w)
		}
	}
	for _, bad := range []string{"", "P", "1-2-3", "x", "1:2", "PT1Y", "1 2 3 4"} {
		if v, err := ParseInterval(bad); err == nil {
			t.Errorf("ParseInterval(%q) = %+v, want an error", bad, v)
		}
	}
}
