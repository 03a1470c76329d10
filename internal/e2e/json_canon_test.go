package e2e

import (
	"errors"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/api/iterator"
)

// TestJSONWrittenCanonical: a JSON value written through the Storage
// Write API with whitespace, a duplicate key, unsorted keys and numbers
// in non-canonical form comes back in BigQuery's canonical text from
// tabledata.list, a query (getQueryResults) and the Read API alike.
// Before, all three returned the text as sent.
func TestJSONWrittenCanonical(t *testing.T) {
	e := newEnv(t)
	sch := bigquery.Schema{{Name: "id", Type: bigquery.IntegerFieldType}, {Name: "j", Type: bigquery.JSONFieldType}}
	tp := e.table("t_json", sch)
	dp, md := descriptor(t, sch)
	ms, err := e.mw.NewManagedStream(e.ctx, managedwriter.WithDestinationTable(tp), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	res, err := ms.AppendRows(e.ctx, [][]byte{marshalRow(t, md, map[string]any{"id": int64(1), "j": ` {"b": 1.50, "a": [2e2, "x"], "b": 3} `})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.GetResult(e.ctx); err != nil {
		t.Fatal(err)
	}
	const want = `{"a":[200,"x"],"b":1.5}`

	it := e.bq.Dataset("d").Table("t_json").Read(e.ctx)
	var row []bigquery.Value
	if err := it.Next(&row); err != nil || row[1] != want {
		t.Fatalf("tabledata.list: %v, %v; want %s", row, err, want)
	}
	got, _ := queryRows(t, e, e.bq.Query("SELECT j FROM d.t_json"))
	if len(got) != 1 || got[0][0] != want {
		t.Fatalf("query: %v, want %s", got, want)
	}
	recs := e.readAll(tp, 1, nil, nil)
	n := 0
	for _, r := range recs {
		col := r.Column(1).(*array.String)
		for i := 0; i < col.Len(); i++ {
			if col.Value(i) != want {
				t.Fatalf("Read API: %s, want %s", col.Value(i), want)
			}
			n++
		}
		r.Release()
	}
	if n != 1 {
		t.Fatalf("Read API: %d rows", n)
	}
	if err := it.Next(&row); !errors.Is(err, iterator.Done) {
		t.Fatalf("tabledata.list: a second row %v, %v", row, err)
	}
}
