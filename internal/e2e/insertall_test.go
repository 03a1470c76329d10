package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/civil"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// insertSchema covers the JSON value conventions insertAll reads.
var insertSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType, MaxLength: 10},
	{Name: "ts", Type: bigquery.TimestampFieldType},
	{Name: "amount", Type: bigquery.NumericFieldType},
	{Name: "tags", Type: bigquery.StringFieldType, Repeated: true},
	{Name: "rec", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
		{Name: "x", Type: bigquery.IntegerFieldType},
		{Name: "y", Type: bigquery.StringFieldType},
	}},
	{Name: "day", Type: bigquery.DateFieldType},
	{Name: "raw", Type: bigquery.BytesFieldType},
	{Name: "def", Type: bigquery.IntegerFieldType, DefaultValueExpression: "7"},
}

type insertRec struct {
	X int64  `bigquery:"x"`
	Y string `bigquery:"y"`
}

// insertRow is a struct row as Go users write them: the Inserter's
// StructSaver turns it into JSON (time.Time with nanoseconds, civil.Date,
// []byte as base64, *big.Rat as a decimal string).
type insertRow struct {
	ID     int64      `bigquery:"id"`
	Name   string     `bigquery:"name"`
	TS     time.Time  `bigquery:"ts"`
	Amount *big.Rat   `bigquery:"amount"`
	Tags   []string   `bigquery:"tags"`
	Rec    insertRec  `bigquery:"rec"`
	Day    civil.Date `bigquery:"day"`
	Raw    []byte     `bigquery:"raw"`
}

// readRows lists a table through tabledata.list, every page, ordered by
// the first column (an INTEGER).
func (e *env) readRows(table string) [][]bigquery.Value {
	e.t.Helper()
	it := e.bq.Dataset("d").Table(table).Read(e.ctx)
	it.PageInfo().MaxSize = 3
	var out [][]bigquery.Value
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			e.t.Fatalf("read %s: %v", table, err)
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0].(int64) < out[j][0].(int64) })
	return out
}

func TestInsertAllGoInserter(t *testing.T) {
	e := newEnv(t)
	e.table("ins", insertSchema)
	ins := e.bq.Dataset("d").Table("ins").Inserter()
	ts := time.Date(2026, 11, 30, 12, 34, 56, 123456789, time.UTC)
	good := []*insertRow{
		{ID: 1, Name: "one", TS: ts, Amount: big.NewRat(314, 100), Tags: []string{"a", "b"}, Rec: insertRec{5, "p"}, Day: civil.Date{Year: 2026, Month: 11, Day: 30}, Raw: []byte{0, 1, 255}},
		{ID: 2, Name: "two", TS: ts, Amount: big.NewRat(-1, 8), Day: civil.Date{Year: 1, Month: 1, Day: 1}},
	}
	if err := ins.Put(e.ctx, good); err != nil {
		t.Fatalf("Put structs: %v", err)
	}
	// ValueSaver rows: ValuesSaver with an insertId, sent twice (a
	// retry): the second is dropped within the window.
	vs := &bigquery.ValuesSaver{Schema: insertSchema, InsertID: "row-3", Row: []bigquery.Value{
		int64(3), "three", nil, nil, []bigquery.Value{"x"}, []bigquery.Value{int64(9), "q"}, nil, nil, nil}}
	for i := 0; i < 2; i++ {
		if err := ins.Put(e.ctx, vs); err != nil {
			t.Fatalf("Put ValuesSaver (try %d): %v", i, err)
		}
	}
	// A map-based ValueSaver; the default of "def" applies when it is missing.
	if err := ins.Put(e.ctx, mapSaver{"id": 4, "name": "four", "def": 40}); err != nil {
		t.Fatalf("Put map saver: %v", err)
	}

	got := e.readRows("ins")
	if len(got) != 4 {
		t.Fatalf("read %d rows, want 4 (insertId de-duplication): %v", len(got), got)
	}
	r1 := got[0]
	if r1[0] != int64(1) || r1[1] != "one" || !r1[2].(time.Time).Equal(ts.Truncate(time.Microsecond)) ||
		r1[3].(*big.Rat).Cmp(big.NewRat(314, 100)) != 0 || !reflect.DeepEqual(r1[4], []bigquery.Value{"a", "b"}) ||
		!reflect.DeepEqual(r1[5], []bigquery.Value{int64(5), "p"}) || r1[6] != (civil.Date{Year: 2026, Month: 11, Day: 30}) ||
		!bytes.Equal(r1[7].([]byte), []byte{0, 1, 255}) || r1[8] != int64(7) {
		t.Errorf("row 1 = %v", r1)
	}
	if got[2][1] != "three" || !reflect.DeepEqual(got[2][5], []bigquery.Value{int64(9), "q"}) || got[2][8] != int64(7) {
		t.Errorf("row 3 = %v", got[2])
	}
	if got[3][8] != int64(40) || got[3][2] != nil {
		t.Errorf("row 4 = %v", got[3])
	}

	// Bad rows: a name over its maxLength, an unknown field, a missing
	// REQUIRED id, an INT64 that is not one. Without SkipInvalidRows
	// nothing is written and the good row is "stopped".
	err := ins.Put(e.ctx, []bigquery.ValueSaver{
		mapSaver{"id": 10, "name": "ok"},
		mapSaver{"id": 11, "name": "much too long a name"},
		mapSaver{"id": 12, "nope": 1},
		mapSaver{"name": "no id"},
		mapSaver{"id": "twelve"},
	})
	var pme bigquery.PutMultiError
	if !errors.As(err, &pme) {
		t.Fatalf("Put bad rows: %v (%T), want a PutMultiError", err, err)
	}
	want := map[int]string{
		0: "stopped  ",
		1: "invalid name Field name: STRING value",
		2: "invalid nope no such field: nope.",
		3: "invalid id Missing required field: id.",
		4: "invalid id Cannot convert value to integer (bad value): twelve",
	}
	if len(pme) != len(want) {
		t.Fatalf("PutMultiError has %d rows, want %d: %v", len(pme), len(want), pme)
	}
	for _, rie := range pme {
		w, ok := want[rie.RowIndex]
		if !ok || len(rie.Errors) != 1 {
			t.Fatalf("row error %v", rie)
		}
		be, ok := rie.Errors[0].(*bigquery.Error)
		if !ok {
			t.Fatalf("row %d: error %T", rie.RowIndex, rie.Errors[0])
		}
		if g := be.Reason + " " + be.Location + " " + be.Message; !strings.HasPrefix(g, w) {
			t.Errorf("row %d: got %q, want prefix %q", rie.RowIndex, g, w)
		}
		if rie.InsertID == "" {
			t.Errorf("row %d: no insertId reported", rie.RowIndex)
		}
	}
	if n := len(e.readRows("ins")); n != 4 {
		t.Fatalf("%d rows after a refused request, want 4", n)
	}

	// SkipInvalidRows writes the good rows and reports only the bad;
	// IgnoreUnknownValues drops unknown fields.
	ins.SkipInvalidRows = true
	ins.IgnoreUnknownValues = true
	err = ins.Put(e.ctx, []bigquery.ValueSaver{
		mapSaver{"id": 20, "extra": "ignored"},
		mapSaver{"id": 21, "name": "much too long a name"},
		mapSaver{"id": 22, "rec": map[string]any{"x": "23", "zz": true}},
	})
	if !errors.As(err, &pme) || len(pme) != 1 || pme[0].RowIndex != 1 {
		t.Fatalf("Put with SkipInvalidRows: %v", err)
	}
	got = e.readRows("ins")
	if len(got) != 6 || got[4][0] != int64(20) || got[5][0] != int64(22) || !reflect.DeepEqual(got[5][5], []bigquery.Value{int64(23), nil}) {
		t.Fatalf("rows after SkipInvalidRows: %v", got)
	}

	// templateSuffix: the suffixed table is created with the template's
	// schema and receives the rows.
	tins := e.bq.Dataset("d").Table("ins").Inserter()
	tins.TableTemplateSuffix = "_20261130"
	if err := tins.Put(e.ctx, mapSaver{"id": 30}); err != nil {
		t.Fatalf("Put with a template suffix: %v", err)
	}
	md, err := e.bq.Dataset("d").Table("ins_20261130").Metadata(e.ctx)
	if err != nil {
		t.Fatalf("suffixed table: %v", err)
	}
	if len(md.Schema) != len(insertSchema) {
		t.Fatalf("suffixed table schema has %d fields, want %d", len(md.Schema), len(insertSchema))
	}
	if got := e.readRows("ins_20261130"); len(got) != 1 || got[0][0] != int64(30) || got[0][8] != int64(7) {
		t.Fatalf("suffixed table rows: %v", got)
	}
	if err := tins.Put(e.ctx, mapSaver{"id": 31}); err != nil {
		t.Fatalf("second Put with a template suffix: %v", err)
	}
	if got := e.readRows("ins_20261130"); len(got) != 2 {
		t.Fatalf("suffixed table has %d rows, want 2", len(got))
	}
}

// mapSaver is a ValueSaver over a map, with a fresh insertId per Save.
type mapSaver map[string]any

func (m mapSaver) Save() (map[string]bigquery.Value, string, error) {
	out := map[string]bigquery.Value{}
	for k, v := range m {
		out[k] = v
	}
	return out, "", nil
}

// postInsertAll sends a raw insertAll body and returns the status and the
// decoded JSON answer.
func (e *env) postInsertAll(table string, body []byte) (int, map[string]any) {
	e.t.Helper()
	url := fmt.Sprintf("http://%s/bigquery/v2/projects/%s/datasets/d/tables/%s/insertAll", e.srv.HTTPAddr(), project, table)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("answer %q: %v", b, err)
	}
	return resp.StatusCode, out
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func TestInsertAllBadRequests(t *testing.T) {
	e := newEnv(t)
	e.table("bad", insertSchema)
	manyRows := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"rows":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"json":{"id":%d}}`, i)
		}
		b.WriteString(`]}`)
		return b.Bytes()
	}
	big := []byte(`{"rows":[{"json":{"id":1,"name":"` + strings.Repeat("x", 10<<20) + `"}}]}`)
	for _, c := range []struct {
		name string
		body []byte
		code int
		msg  string
	}{
		{"rows over the limit", manyRows(50001), 400, "too many rows present in the request, limit: 50000 row count: 50001."},
		{"body over 10 MB", big, 400, "Request payload size exceeds the limit: 10485760 bytes."},
		{"unknown member", []byte(`{"rows":[{"json":{"id":1}}],"skipInvalid":true}`), 400, `Invalid JSON payload received. Unknown name "skipInvalid": Cannot find field.`},
		{"unknown row member", []byte(`{"rows":[{"json":{"id":1},"insert_id":"a","extra":1}]}`), 400, `Unknown name "extra" at 'rows[0]': Cannot find field.`},
		{"wrong type", []byte(`{"rows":[],"skipInvalidRows":"yes"}`), 400, "Invalid value at 'skip_invalid_rows' (TYPE_BOOL)"},
		{"json not an object", []byte(`{"rows":[{"json":[1]}]}`), 400, "Invalid value at 'rows[0].json'"},
		{"table disagrees", []byte(`{"tableId":"other","rows":[{"json":{"id":1}}]}`), 400, "Value other in content does not agree with value bad."},
		{"no rows", []byte(`{"rows":[]}`), 400, "No rows present in the request."},
		{"malformed", []byte(`{"rows":[`), 400, "Invalid JSON payload received."},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := e.postInsertAll("bad", c.body)
			if code != c.code || !strings.Contains(errMessage(out), c.msg) {
				t.Fatalf("got %d %v, want %d with %q", code, out, c.code, c.msg)
			}
		})
	}
	// Parameters equal to the path, kind and traceId, and proto names are
	// accepted (what the official clients may send).
	code, out := e.postInsertAll("bad", []byte(`{"kind":"bigquery#tableDataInsertAllRequest","projectId":"`+project+
		`","datasetId":"d","tableId":"bad","trace_id":"t","rows":[{"insert_id":"x","json":{"id":1}}]}`))
	if code != 200 || out["kind"] != "bigquery#tableDataInsertAllResponse" || out["insertErrors"] != nil {
		t.Fatalf("full body: %d %v", code, out)
	}
	// 50,000 rows is within the limit; a missing table is 404.
	if code, out := e.postInsertAll("bad", manyRows(50000)); code != 200 || out["insertErrors"] != nil {
		t.Fatalf("50000 rows: %d %v", code, out)
	}
	if code, out := e.postInsertAll("nope", []byte(`{"rows":[{"json":{"id":1}}]}`)); code != 404 || !strings.Contains(errMessage(out), "Not found: Table") {
		t.Fatalf("missing table: %d %v", code, out)
	}
	// The answer's insertErrors shape, as BigQuery sends it.
	code, out = e.postInsertAll("bad", []byte(`{"rows":[{"json":{"id":1}},{"json":{"id":"x"}}]}`))
	b, _ := json.Marshal(out["insertErrors"])
	if code != 200 || string(b) != `[{"errors":[{"debugInfo":"","location":"","message":"","reason":"stopped"}],"index":0},`+
		`{"errors":[{"debugInfo":"","location":"id","message":"Cannot convert value to integer (bad value): x","reason":"invalid"}],"index":1}]` {
		t.Fatalf("insertErrors: %d %s", code, b)
	}
}

// TestInsertAllJSONValues: the JSON forms BigQuery reads in insertAll rows
// for each type (INT64 as a string, TIMESTAMP as epoch seconds or text,
// NUMERIC as a number, BYTES base64, JSON as a value or as text, RANGE as
// an object or "[start, end)", ...), read back with the Go client.
func TestInsertAllJSONValues(t *testing.T) {
	e := newEnv(t)
	e.table("vals", bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType},
		{Name: "ts", Type: bigquery.TimestampFieldType},
		{Name: "n", Type: bigquery.NumericFieldType},
		{Name: "bn", Type: bigquery.BigNumericFieldType},
		{Name: "b", Type: bigquery.BooleanFieldType},
		{Name: "f", Type: bigquery.FloatFieldType},
		{Name: "by", Type: bigquery.BytesFieldType},
		{Name: "d", Type: bigquery.DateFieldType},
		{Name: "tm", Type: bigquery.TimeFieldType},
		{Name: "dt", Type: bigquery.DateTimeFieldType},
		{Name: "g", Type: bigquery.GeographyFieldType},
		{Name: "j", Type: bigquery.JSONFieldType},
		{Name: "r", Type: bigquery.RangeFieldType, RangeElementType: &bigquery.RangeElementType{Type: bigquery.DateFieldType}},
		{Name: "s", Type: bigquery.StringFieldType},
	})
	code, out := e.postInsertAll("vals", []byte(`{"rows":[
		{"json":{"id":"1","ts":1700000000.5,"n":1.25,"bn":"12345678901234567890.125","b":"true","f":"NaN","by":"AAH/",
		 "d":"2026-11-30","tm":"12:34:56.123456","dt":"2026-11-30T12:34:56","g":"POINT(1 2)","j":{"a":[1,2]},
		 "r":{"start":"2026-01-01","end":null},"s":123}},
		{"json":{"id":3,"ts":"2026-11-30 12:00:00+01:00"}},
		{"json":{"id":2,"n":"-0.000000001","b":false,"f":1e308,"j":"\"x\"",
		 "r":"[2026-01-01, UNBOUNDED)","s":true,"g":"{\"type\":\"Point\",\"coordinates\":[3,4]}","ts":"1700000001"}}]}`))
	if code != 200 || out["insertErrors"] != nil {
		t.Fatalf("insertAll: %d %v", code, out)
	}
	rows := e.readRows("vals")
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	r1, r2, r3 := rows[0], rows[1], rows[2]
	check3 := r3[1].(time.Time).Equal(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	rat := func(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }
	check := func(name string, ok bool, v any) {
		t.Helper()
		if !ok {
			t.Errorf("%s = %#v", name, v)
		}
	}
	check("r1.ts", r1[1].(time.Time).Equal(time.Unix(1700000000, 5e8)), r1[1])
	check("r1.n", r1[2].(*big.Rat).Cmp(rat("1.25")) == 0, r1[2])
	check("r1.bn", r1[3].(*big.Rat).Cmp(rat("12345678901234567890.125")) == 0, r1[3])
	check("r1.b", r1[4] == true, r1[4])
	check("r1.f", r1[5].(float64) != r1[5].(float64), r1[5]) // NaN
	check("r1.by", bytes.Equal(r1[6].([]byte), []byte{0, 1, 255}), r1[6])
	check("r1.d", r1[7] == civil.Date{Year: 2026, Month: 11, Day: 30}, r1[7])
	check("r1.tm", r1[8] == civil.Time{Hour: 12, Minute: 34, Second: 56, Nanosecond: 123456000}, r1[8])
	check("r1.dt", r1[9] == civil.DateTime{Date: civil.Date{Year: 2026, Month: 11, Day: 30}, Time: civil.Time{Hour: 12, Minute: 34, Second: 56}}, r1[9])
	check("r1.g", r1[10] == "POINT(1 2)", r1[10])
	check("r1.j", r1[11] == `{"a":[1,2]}`, r1[11])
	rv, _ := r1[12].(*bigquery.RangeValue)
	check("r1.r", rv != nil && rv.Start == civil.Date{Year: 2026, Month: 1, Day: 1} && rv.End == nil, r1[12])
	check("r1.s", r1[13] == "123", r1[13])
	check("r2.ts", r2[1].(time.Time).Equal(time.Unix(1700000001, 0)), r2[1]) // a string of a number: seconds
	check("r2.n", r2[2].(*big.Rat).Cmp(rat("-0.000000001")) == 0, r2[2])
	check("r2.b", r2[4] == false, r2[4])
	check("r2.f", r2[5] == 1e308, r2[5])
	check("r2.g", r2[10] == "POINT(3 4)", r2[10])
	check("r2.j", r2[11] == `"x"`, r2[11])
	rv, _ = r2[12].(*bigquery.RangeValue)
	check("r2.r", rv != nil && rv.Start == civil.Date{Year: 2026, Month: 1, Day: 1} && rv.End == nil, r2[12])
	check("r2.s", r2[13] == "true", r2[13])
	check("r3.ts", check3, r3[1])

	// After a column is added, rows with it are taken at once (the
	// converters are per schema version).
	tbl := e.bq.Dataset("d").Table("vals")
	md, err := tbl.Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Update(e.ctx, bigquery.TableMetadataToUpdate{
		Schema: append(md.Schema, &bigquery.FieldSchema{Name: "added", Type: bigquery.StringFieldType})}, md.ETag); err != nil {
		t.Fatal(err)
	}
	if code, out := e.postInsertAll("vals", []byte(`{"rows":[{"json":{"id":4,"added":"yes"}}]}`)); code != 200 || out["insertErrors"] != nil {
		t.Fatalf("insert after adding a column: %d %v", code, out)
	}
	if rows := e.readRows("vals"); len(rows) != 4 || rows[3][14] != "yes" {
		t.Fatalf("rows after adding a column: %v", rows)
	}
}

// TestInsertAllDiskQuota: with --max-disk-bytes, an insertAll that would
// take the data directory past the limit is refused 403 quotaExceeded
// (REST's RESOURCE_EXHAUSTED, which the Go client does not retry),
// nothing of it stored.
func TestInsertAllDiskQuota(t *testing.T) {
	const limit = 2 << 20
	srv := testkit.Start(t, func(c *server.Config) { c.MaxDiskBytes = limit })
	e := dial(t, t.Context(), srv)
	e.table("q", insertSchema)
	body := []byte(`{"rows":[{"json":{"id":1,"tags":["` + strings.Repeat("x", 100<<10) + `"]}}]}`)
	acked := 0
	for {
		if acked > 2*limit/(100<<10) {
			t.Fatalf("%d inserts of 100 KiB acknowledged under a %d-byte disk limit", acked, limit)
		}
		code, out := e.postInsertAll("q", body)
		if code == 200 && out["insertErrors"] == nil {
			acked++
			continue
		}
		errs, _ := out["error"].(map[string]any)["errors"].([]any)
		if code != 403 || len(errs) != 1 || errs[0].(map[string]any)["reason"] != "quotaExceeded" ||
			!strings.Contains(errMessage(out), "--max-disk-bytes") {
			t.Fatalf("insert %d: %d %v, want 403 quotaExceeded naming the flag", acked, code, out)
		}
		break
	}
	if acked == 0 {
		t.Fatal("the first insert was refused")
	}
	if n := len(e.readRows("q")); n != acked {
		t.Fatalf("%d rows read back, %d acknowledged", n, acked)
	}
}
