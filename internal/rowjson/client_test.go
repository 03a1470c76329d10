package rowjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/testkit/arrowgen"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/civil"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/bqstore/bqstore/internal/schema"
)

// tableServer answers the two calls the Go client's Table.Read makes:
// tables.get (for the schema) and tabledata.list, paging through rec.
type tableServer struct {
	t        *testing.T
	s        *schema.Schema
	rec      arrow.Record
	pageSize int
	int64TS  []bool // formatOptions.useInt64Timestamp of each tabledata.list call
}

func (ts *tableServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const base = "/projects/p/datasets/d/tables/t"
	switch r.URL.Path {
	case base:
		b, err := json.Marshal(map[string]any{"schema": ts.s})
		if err != nil {
			ts.t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	case base + "/data":
		q := r.URL.Query()
		int64TS := q.Get("formatOptions.useInt64Timestamp") == "true"
		ts.int64TS = append(ts.int64TS, int64TS)
		start := 0
		if tok := q.Get("pageToken"); tok != "" {
			start, _ = strconv.Atoi(tok)
		} else if si := q.Get("startIndex"); si != "" {
			start, _ = strconv.Atoi(si)
		}
		n := ts.pageSize
		if mr := q.Get("maxResults"); mr != "" {
			if m, _ := strconv.Atoi(mr); m > 0 && m < n {
				n = m
			}
		}
		total := int(ts.rec.NumRows())
		end := min(start+n, total)
		f := NewFormatter(ts.s, Options{UseInt64Timestamp: int64TS})
		rows, err := f.AppendRows(nil, ts.rec, start, end)
		if err != nil {
			ts.t.Error(err)
			http.Error(w, err.Error(), 500)
			return
		}
		p := Page{ETag: "etag-1", TotalRows: int64(total), Rows: rows}
		if end < total {
			p.PageToken = strconv.Itoa(end)
		}
		body := AppendPage(nil, p)
		if !json.Valid(body) {
			ts.t.Errorf("invalid JSON page: %s", body)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	default:
		ts.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

func newClient(t *testing.T, h http.Handler) *bigquery.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := bigquery.NewClient(context.Background(), "p",
		option.WithEndpoint(srv.URL), option.WithoutAuthentication(), option.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestGoClientReadsRows serves a random record of every type through a
// tabledata.list built with AppendRows/AppendPage and reads it with the
// official Go client's Table.Read, comparing every value.
func TestGoClientReadsRows(t *testing.T) {
	s := arrowgen.AllTypes()
	const seed = 11
	t.Logf("seed %d", seed)
	rec := arrowgen.Record(s, rand.New(rand.NewPCG(seed, 0)), 150)
	defer rec.Release()
	ts := &tableServer{t: t, s: s, rec: rec, pageSize: 23}
	c := newClient(t, ts)
	it := c.Dataset("d").Table("t").Read(context.Background())
	row := 0
	for {
		var vals []bigquery.Value
		err := it.Next(&vals)
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatalf("row %d: %v", row, err)
		}
		if len(vals) != len(s.Fields) {
			t.Fatalf("row %d: %d values", row, len(vals))
		}
		for i, f := range s.Fields {
			want := expectValue(f, rec.Column(i), row)
			if !equalValue(vals[i], want) {
				t.Fatalf("row %d column %s:\n got %#v\nwant %#v", row, f.Name, vals[i], want)
			}
		}
		row++
	}
	if row != int(rec.NumRows()) {
		t.Fatalf("read %d rows, want %d", row, rec.NumRows())
	}
	if it.TotalRows != uint64(rec.NumRows()) {
		t.Fatalf("TotalRows = %d", it.TotalRows)
	}
	if len(ts.int64TS) < 2 {
		t.Fatalf("expected several pages, got %d calls", len(ts.int64TS))
	}
	for _, v := range ts.int64TS {
		if !v {
			t.Fatalf("the Go client did not ask for int64 timestamps; the legacy form is then what it parses")
		}
	}
}

// expectValue is the value the Go client should produce for a cell, computed
// from the Arrow data independently of the JSON.
func expectValue(f *schema.Field, arr arrow.Array, row int) bigquery.Value {
	if f.EffectiveMode() == schema.Repeated {
		l := arr.(*array.List)
		var out []bigquery.Value
		if l.IsValid(row) {
			s, e := l.ValueOffsets(row)
			for j := s; j < e; j++ {
				out = append(out, expectScalar(f, l.ListValues(), int(j)))
			}
		}
		return out
	}
	return expectScalar(f, arr, row)
}

func expectScalar(f *schema.Field, arr arrow.Array, row int) bigquery.Value {
	if arr.IsNull(row) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int64:
		return a.Value(row)
	case *array.Float64:
		return a.Value(row)
	case *array.Boolean:
		return a.Value(row)
	case *array.String:
		return a.Value(row)
	case *array.Binary:
		return append([]byte{}, a.Value(row)...)
	case *array.Decimal128:
		return new(big.Rat).SetFrac(a.Value(row).BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(9), nil))
	case *array.Decimal256:
		return new(big.Rat).SetFrac(a.Value(row).BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil))
	case *array.Timestamp:
		tm := time.UnixMicro(int64(a.Value(row))).UTC()
		if f.Type == schema.DateTime {
			return civil.DateTimeOf(tm)
		}
		return tm
	case *array.Date32:
		return civil.DateOf(time.Unix(int64(a.Value(row))*86400, 0).UTC())
	case *array.Time64:
		us := int64(a.Value(row))
		return civil.Time{Hour: int(us / 3600e6), Minute: int(us / 60e6 % 60), Second: int(us / 1e6 % 60), Nanosecond: int(us % 1e6 * 1000)}
	case *array.MonthDayNanoInterval:
		v := a.Value(row)
		ns := v.Nanoseconds
		return &bigquery.IntervalValue{
			Years: v.Months / 12, Months: v.Months % 12, Days: v.Days,
			Hours: int32(ns / 3600e9), Minutes: int32(ns / 60e9 % 60), Seconds: int32(ns / 1e9 % 60), SubSecondNanos: int32(ns % 1e9),
		}
	case *array.Struct:
		if f.Type == schema.Range {
			elem := &schema.Field{Type: f.RangeElementType.Type}
			return &bigquery.RangeValue{Start: expectScalar(elem, a.Field(0), row), End: expectScalar(elem, a.Field(1), row)}
		}
		var out []bigquery.Value
		for i, c := range f.Fields {
			out = append(out, expectValue(c, a.Field(i), row))
		}
		return out
	}
	panic("expectScalar: " + arr.DataType().String())
}

func equalValue(got, want bigquery.Value) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case []bigquery.Value:
		g, ok := got.([]bigquery.Value)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !equalValue(g[i], w[i]) {
				return false
			}
		}
		return true
	case float64:
		g, ok := got.(float64)
		return ok && (g == w || math.IsNaN(g) && math.IsNaN(w))
	case *big.Rat:
		g, ok := got.(*big.Rat)
		return ok && g.Cmp(w) == 0
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(w)
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, w)
	case *bigquery.IntervalValue:
		g, ok := got.(*bigquery.IntervalValue)
		if !ok {
			return false
		}
		// The Go client parses the fraction through a float64 and
		// truncates (".510539" reads as 510538999 ns): allow 1 ns.
		gc, wc := *g, *w
		d := gc.SubSecondNanos - wc.SubSecondNanos
		gc.SubSecondNanos, wc.SubSecondNanos = 0, 0
		return gc == wc && d >= -1 && d <= 1
	case *bigquery.RangeValue:
		g, ok := got.(*bigquery.RangeValue)
		return ok && equalValue(g.Start, w.Start) && equalValue(g.End, w.End)
	}
	return fmt.Sprintf("%#v", got) == fmt.Sprintf("%#v", want)
}

// TestRowShape pins the exact JSON of one row: nested records as {"f":[...]},
// repeated fields as [{"v":...}], NULLs, and every scalar as a string.
func TestRowShape(t *testing.T) {
	s := &schema.Schema{Fields: []*schema.Field{
		{Name: "i", Type: schema.Integer, Mode: schema.Nullable},
		{Name: "n", Type: schema.Numeric, Mode: schema.Nullable},
		{Name: "ts", Type: schema.Timestamp, Mode: schema.Nullable},
		{Name: "r", Type: schema.Record, Mode: schema.Nullable, Fields: []*schema.Field{
			{Name: "b", Type: schema.Bytes, Mode: schema.Nullable},
			{Name: "l", Type: schema.Boolean, Mode: schema.Repeated},
		}},
		{Name: "s", Type: schema.String, Mode: schema.Repeated},
		{Name: "rg", Type: schema.Range, Mode: schema.Nullable, RangeElementType: &schema.RangeElementType{Type: schema.Date}},
	}}
	js := `[
		{"i": 42, "n": "-1.500000000", "ts": 1700000000123456, "r": {"b": "aGk=", "l": [true, false]}, "s": ["x", "\"y\""], "rg": {"start": 19000, "end": null}},
		{"i": null, "n": null, "ts": null, "r": null, "s": [], "rg": null}
	]`
	rec, _, err := array.RecordFromJSON(nil, schema.ToArrow(s), strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{UseInt64Timestamp: true}, `{"f":[{"v":"42"},{"v":"-1.5"},{"v":"1700000000123456"},{"v":{"f":[{"v":"aGk="},{"v":[{"v":"true"},{"v":"false"}]}]}},{"v":[{"v":"x"},{"v":"\"y\""}]},{"v":"[2022-01-08, UNBOUNDED)"}]},` +
			`{"f":[{"v":null},{"v":null},{"v":null},{"v":null},{"v":[]},{"v":null}]}`},
		{Options{}, `{"f":[{"v":"42"},{"v":"-1.5"},{"v":"1.700000000123456E9"},{"v":{"f":[{"v":"aGk="},{"v":[{"v":"true"},{"v":"false"}]}]}},{"v":[{"v":"x"},{"v":"\"y\""}]},{"v":"[2022-01-08, UNBOUNDED)"}]},` +
			`{"f":[{"v":null},{"v":null},{"v":null},{"v":null},{"v":[]},{"v":null}]}`},
	} {
		got, err := NewFormatter(s, tc.opts).AppendRows(nil, rec, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("opts %+v:\n got %s\nwant %s", tc.opts, got, tc.want)
		}
	}
	page := AppendPage(nil, Page{ETag: "e", TotalRows: 2, PageToken: "tok", Rows: []byte(`{"f":[]}`)})
	if want := `{"kind":"bigquery#tableDataList","etag":"e","totalRows":"2","pageToken":"tok","rows":[{"f":[]}]}`; string(page) != want {
		t.Errorf("page:\n got %s\nwant %s", page, want)
	}
	if got := string(AppendPage(nil, Page{TotalRows: 0})); got != `{"kind":"bigquery#tableDataList","totalRows":"0"}` {
		t.Errorf("empty page: %s", got)
	}
}

func TestFormatterErrors(t *testing.T) {
	s := arrowgen.AllTypes()
	rec := arrowgen.Record(s, rand.New(rand.NewPCG(1, 0)), 3)
	defer rec.Release()
	// A schema whose column types disagree with the record's Arrow types.
	bad := s.Clone()
	bad.Fields[0].Type = schema.String
	if _, err := NewFormatter(bad, Options{}).AppendRows(nil, rec, 0, 3); err == nil || !strings.Contains(err.Error(), `"int64"`) {
		t.Fatalf("type mismatch: err = %v", err)
	}
	nested := s.Clone()
	nested.Fields[18].Fields[2].Fields[0].Type = schema.Float
	if _, err := NewFormatter(nested, Options{}).AppendRows(nil, rec, 0, 3); err == nil || !strings.Contains(err.Error(), `"rec.inner.x"`) {
		t.Fatalf("nested type mismatch: err = %v", err)
	}
	short := &schema.Schema{Fields: s.Fields[:3]}
	if _, err := NewFormatter(short, Options{}).AppendRows(nil, rec, 0, 3); err == nil {
		t.Fatalf("column count mismatch accepted")
	}
	if _, err := NewFormatter(s, Options{}).AppendRows(nil, rec, 2, 4); err == nil {
		t.Fatalf("row range past the end accepted")
	}
}

func TestSelectFields(t *testing.T) {
	s := arrowgen.AllTypes()
	got, err := SelectFields(s, []string{"recs.inner.x", "JSON", "rec.b"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"fields":[{"name":"json","type":"JSON","mode":"NULLABLE"},{"name":"rec","type":"RECORD","mode":"NULLABLE","fields":[{"name":"b","type":"STRING","mode":"REQUIRED"}]},{"name":"recs","type":"RECORD","mode":"REPEATED","fields":[{"name":"inner","type":"RECORD","mode":"REQUIRED","fields":[{"name":"x","type":"DATE","mode":"NULLABLE"}]}]}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	for _, sel := range []string{"nope", "rec.nope", "int64.x", " "} {
		if _, err := SelectFields(s, []string{sel}); err == nil {
			t.Errorf("%q accepted", sel)
		}
	}
}
