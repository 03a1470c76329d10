package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// appendSimple writes rows first..first+n-1 of simpleSchema through the
// default stream and waits for them.
func (e *env) appendSimple(tp string, md protoreflect.MessageDescriptor, ms *managedwriter.ManagedStream, first, n int) {
	e.t.Helper()
	r, err := ms.AppendRows(e.ctx, rows(e.t, md, first, n))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		e.t.Fatalf("append: %v", err)
	}
}

func TestTableDataListOfficialClient(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_list", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	for i := 0; i < 5; i++ {
		e.appendSimple(tp, md, ms, i*20, 20)
	}

	it := e.bq.Dataset("d").Table("t_list").Read(e.ctx)
	it.PageInfo().MaxSize = 7
	var got []int64
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 10 {
			// Rows committed while the listing runs stay invisible to it.
			e.appendSimple(tp, md, ms, 1000, 5)
		}
		if len(row) != 3 || row[1] != "row" || row[2] != float64(row[0].(int64))/2 {
			t.Fatalf("row %d = %v", len(got), row)
		}
		got = append(got, row[0].(int64))
		if it.TotalRows != 100 {
			t.Fatalf("TotalRows = %d after %d rows, want 100 (the listing's snapshot)", it.TotalRows, len(got))
		}
	}
	if len(got) != 100 {
		t.Fatalf("listed %d rows, want 100", len(got))
	}
	for i, id := range got {
		if id != int64(i) {
			t.Fatalf("row %d has id %d: order or duplicates wrong", i, id)
		}
	}

	// A new listing sees the later rows; StartIndex skips rows.
	it = e.bq.Dataset("d").Table("t_list").Read(e.ctx)
	it.StartIndex = 98
	var tail []int64
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tail = append(tail, row[0].(int64))
	}
	if len(tail) != 7 || tail[0] != 98 || tail[2] != 1000 || it.TotalRows != 105 {
		t.Fatalf("from index 98: %v (total %d)", tail, it.TotalRows)
	}

	// A missing table is notFound.
	it = e.bq.Dataset("d").Table("missing").Read(e.ctx)
	var row []bigquery.Value
	err = it.Next(&row)
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) || gerr.Code != http.StatusNotFound {
		t.Fatalf("list of a missing table: %v", err)
	}
}

func TestTableDataListParams(t *testing.T) {
	e := newEnv(t)
	sch := bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		{Name: "ts", Type: bigquery.TimestampFieldType},
		{Name: "rec", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
			{Name: "a", Type: bigquery.StringFieldType},
			{Name: "b", Type: bigquery.IntegerFieldType},
		}},
	}
	tp := e.table("t_params", sch)
	dp, md := descriptor(t, sch)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	var data [][]byte
	for i := 0; i < 3; i++ {
		data = append(data, marshalRow(t, md, map[string]any{
			"id": int64(i), "ts": int64(1_700_000_000_000_000 + i),
			"rec": map[string]any{"a": "x", "b": int64(i * 10)},
		}))
	}
	r, err := ms.AppendRows(e.ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetResult(e.ctx); err != nil {
		t.Fatal(err)
	}

	get := func(q url.Values) (int, map[string]any) {
		t.Helper()
		u := "http://" + e.srv.HTTPAddr() + "/bigquery/v2/projects/local/datasets/d/tables/t_params/data?" + q.Encode()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v: %s", u, err, b)
		}
		return resp.StatusCode, out
	}
	cell := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	code, out := get(url.Values{"selectedFields": {"rec.b,id"}, "maxResults": {"2"}, "formatOptions.useInt64Timestamp": {"true"}})
	if code != 200 || out["totalRows"] != "3" || out["pageToken"] == nil || out["kind"] != "bigquery#tableDataList" {
		t.Fatalf("page 1: %d %v", code, out)
	}
	if got, want := cell(out["rows"]), `[{"f":[{"v":"0"},{"v":{"f":[{"v":"0"}]}}]},{"f":[{"v":"1"},{"v":{"f":[{"v":"10"}]}}]}]`; got != want {
		t.Fatalf("rows = %s, want %s", got, want)
	}
	code, out = get(url.Values{"selectedFields": {"ts"}, "pageToken": {out["pageToken"].(string)}, "formatOptions.useInt64Timestamp": {"true"}})
	if code != 200 || out["pageToken"] != nil || cell(out["rows"]) != `[{"f":[{"v":"1700000000000002"}]}]` {
		t.Fatalf("page 2: %d %v", code, out)
	}
	code, out = get(url.Values{"selectedFields": {"ts"}, "startIndex": {"1"}, "maxResults": {"1"}})
	if code != 200 || cell(out["rows"]) != `[{"f":[{"v":"1.700000000000001E9"}]}]` {
		t.Fatalf("float timestamp: %d %v", code, out)
	}
	code, out = get(url.Values{"startIndex": {"3"}})
	if code != 200 || out["rows"] != nil || out["totalRows"] != "3" {
		t.Fatalf("startIndex at the end: %d %v", code, out)
	}
	for _, q := range []url.Values{
		{"selectedFields": {"nope"}},
		{"selectedFields": {"id.x"}},
		{"maxResults": {"-1"}},
		{"startIndex": {"x"}},
		{"pageToken": {"garbage!"}},
		{"formatOptions.useInt64Timestamp": {"maybe"}},
	} {
		code, out := get(q)
		errObj, _ := out["error"].(map[string]any)
		if code != 400 || errObj == nil {
			t.Fatalf("%v: %d %v, want 400", q, code, out)
		}
	}
}

// canonBQ canonicalizes a value the Go client's RowIterator returns.
func canonBQ(f *bigquery.FieldSchema, v bigquery.Value, elem bool) (any, error) {
	if f.Repeated && !elem {
		out := []any{}
		l, _ := v.([]bigquery.Value)
		for _, el := range l {
			c, err := canonBQ(f, el, true)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	if v == nil {
		return nil, nil
	}
	switch f.Type {
	case bigquery.RecordFieldType:
		vals, ok := v.([]bigquery.Value)
		if !ok || len(vals) != len(f.Schema) {
			return nil, fmt.Errorf("%s: record %T %v", f.Name, v, v)
		}
		out := map[string]any{}
		for i, sf := range f.Schema {
			c, err := canonBQ(sf, vals[i], false)
			if err != nil {
				return nil, err
			}
			out[sf.Name] = c
		}
		return out, nil
	case bigquery.RangeFieldType:
		rv, ok := v.(*bigquery.RangeValue)
		if !ok {
			return nil, fmt.Errorf("%s: range %T", f.Name, v)
		}
		rf := rangeFields(f)
		start, err := canonBQ(rf[0], rv.Start, false)
		if err != nil {
			return nil, err
		}
		end, err := canonBQ(rf[1], rv.End, false)
		if err != nil {
			return nil, err
		}
		return map[string]any{"start": start, "end": end}, nil
	}
	return canonScalar(f, f.Type, v)
}

// TestTableDataListEveryType lists the every-type table with the Go
// client, which parses each cell by its schema type.
func TestTableDataListEveryType(t *testing.T) {
	e := newEnv(t)
	_, want := writeAllTypes(t, e, "t_list_types")
	it := e.bq.Dataset("d").Table("t_list_types").Read(e.ctx)
	var got []map[string]any
	for {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for i, f := range allTypesSchema {
			c, err := canonBQ(f, row[i], false)
			if err != nil {
				t.Fatal(err)
			}
			m[f.Name] = c
		}
		got = append(got, m)
	}
	sortByID(got)
	diffRows(t, "tabledata.list", got, want)
}

// TestTableDataListPinsSchema: a listing keeps the schema of its first
// page after a column is added; a new listing has the new column.
func TestTableDataListPinsSchema(t *testing.T) {
	e := newEnv(t)
	tp := e.table("t_list_schema", simpleSchema)
	dp, md := descriptor(t, simpleSchema)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e.appendSimple(tp, md, ms, 0, 4)
	get := func(q url.Values) (rows []struct {
		F []json.RawMessage `json:"f"`
	}, token string) {
		t.Helper()
		resp, err := http.Get("http://" + e.srv.HTTPAddr() + "/projects/local/datasets/d/tables/t_list_schema/data?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct {
			PageToken string `json:"pageToken"`
			Rows      []struct {
				F []json.RawMessage `json:"f"`
			} `json:"rows"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		return page.Rows, page.PageToken
	}
	rows1, tok := get(url.Values{"maxResults": {"2"}})
	if len(rows1) != 2 || tok == "" {
		t.Fatalf("page 1: %d rows, token %q", len(rows1), tok)
	}
	tbl := e.bq.Dataset("d").Table("t_list_schema")
	meta, err := tbl.Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	wider := append(append(bigquery.Schema{}, meta.Schema...), &bigquery.FieldSchema{Name: "extra", Type: bigquery.StringFieldType})
	if _, err := tbl.Update(e.ctx, bigquery.TableMetadataToUpdate{Schema: wider}, meta.ETag); err != nil {
		t.Fatal(err)
	}
	e.appendSimple(tp, md, ms, 4, 3)
	rows2, tok := get(url.Values{"pageToken": {tok}})
	if len(rows2) != 2 || tok != "" {
		t.Fatalf("page 2: %d rows, token %q; want the 2 remaining rows of the pinned snapshot", len(rows2), tok)
	}
	for _, r := range rows2 {
		if len(r.F) != 3 {
			t.Fatalf("page 2 row has %d cells, want the 3 columns of the listing's snapshot", len(r.F))
		}
	}
	rows3, _ := get(url.Values{})
	if len(rows3) != 7 || len(rows3[0].F) != 4 {
		t.Fatalf("new listing: %d rows of %d cells, want 7 of 4", len(rows3), len(rows3[0].F))
	}
}
