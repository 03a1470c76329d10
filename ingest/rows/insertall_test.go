package rows

import (
	"testing"
	"time"
)

// TestInsertAllTimes: with Options.InsertAll a TIMESTAMP number is seconds
// since the epoch (tabledata.insertAll's convention), and sub-microsecond
// digits of civil times are dropped instead of refused.
func TestInsertAllTimes(t *testing.T) {
	m, err := NewWithOptions(testSchema(), Options{InsertAll: true})
	if err != nil {
		t.Fatal(err)
	}
	md := messageDescriptor(t, m.Descriptor())
	us := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	for _, c := range []struct {
		in   string
		want int64
	}{
		{`1700000000`, 1700000000_000000},
		{`1700000000.123456`, 1700000000_123456},
		{`1700000000.1234569`, 1700000000_123456},
		{`-1.5`, -1_500000},
		{`1.7e9`, 1700000000_000000},
		{`"1700000000.25"`, 1700000000_250000},
		{`"2024-02-29T12:34:56.123456789Z"`, us("2024-02-29T12:34:56.123456Z")},
		{`"2024-02-29 12:34:56 UTC"`, us("2024-02-29T12:34:56Z")},
	} {
		row, err := m.Append(nil, []byte(`{"id":1,"ts":`+c.in+`}`))
		if err != nil {
			t.Errorf("ts %s: %v", c.in, err)
			continue
		}
		if got := get(decode(t, md, row), "ts").Int(); got != c.want {
			t.Errorf("ts %s = %d, want %d", c.in, got, c.want)
		}
	}
	for _, in := range []string{`1e300`, `"1700000000x"`, `true`, `9999999999999`} {
		if _, err := m.Append(nil, []byte(`{"id":1,"ts":`+in+`}`)); err == nil {
			t.Errorf("ts %s accepted", in)
		}
	}
	// DATETIME and TIME lose their nanoseconds too.
	if _, err := m.Append(nil, []byte(`{"id":1,"dt":"2024-01-02 03:04:05.123456789","t":"03:04:05.999999999"}`)); err != nil {
		t.Errorf("civil times with nanoseconds: %v", err)
	}
	// The default (bqstore ingest) still reads a number as microseconds.
	def, _ := newMapper(t, UnknownReject)
	row, err := def.Append(nil, []byte(`{"id":1,"ts":1700000000}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := get(decode(t, md, row), "ts").Int(); got != 1700000000 {
		t.Errorf("default ts = %d, want microseconds", got)
	}
}

// TestInsertAllRequiredDefault: under InsertAll a REQUIRED column with a
// default may be missing; without a default, or by default, it may not.
func TestInsertAllRequiredDefault(t *testing.T) {
	sch := testSchema()
	sch.Fields[0].DefaultValueExpression = "7"
	m, err := NewWithOptions(sch, Options{InsertAll: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Append(nil, []byte(`{"s":"x"}`)); err != nil {
		t.Errorf("missing REQUIRED column with a default: %v", err)
	}
	if _, err := m.Append(nil, []byte(`{"id":null}`)); err == nil {
		t.Errorf("null REQUIRED column accepted")
	}
	def, err := New(sch, UnknownReject)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := def.Append(nil, []byte(`{"s":"x"}`)); err == nil {
		t.Errorf("ingest mapper accepted a missing REQUIRED column")
	}
}
