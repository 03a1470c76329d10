package jobs

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
	"github.com/bqstore/bqstore/internal/storage"
)

// engineStore is a Store over an engine and a catalog holding dataset
// p:d.
func engineStore(t *testing.T, opts Options) (*Store, *catalog.Catalog, *storage.DB) {
	t.Helper()
	db, err := storage.Open(t.TempDir(), &storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := catalog.Open(t.TempDir(), catalog.Options{Observer: engineObserver{db}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateDataset(context.Background(), catalog.Dataset{ProjectID: "p", DatasetID: "d", Location: "US"}); err != nil {
		t.Fatal(err)
	}
	opts.DB = db
	s := New(cat, opts)
	t.Cleanup(func() { s.Close() })
	return s, cat, db
}

// fillTable creates p:d.name (x INT64, s STRING) holding x = 0..n-1 and
// s = "row-<x>", appended in batches of 4096 rows.
func fillTable(t *testing.T, cat *catalog.Catalog, db *storage.DB, name string, n int) {
	t.Helper()
	ctx := context.Background()
	sch := &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer, Mode: schema.Nullable}, {Name: "s", Type: schema.String, Mode: schema.Nullable}}}
	ct, err := cat.CreateTable(ctx, catalog.TableSpec{ProjectID: "p", DatasetID: "d", TableID: name, Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Table(ct.ID)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.CreateStream(ctx, storage.StreamPending)
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 4096 {
		hi := min(n, lo+4096)
		res := &sql.Result{Schema: sch}
		for x := lo; x < hi; x++ {
			res.Rows = append(res.Rows, []any{int64(x), fmt.Sprintf("row-%d", x)})
		}
		rec, err := res.Record()
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Append(ctx, storage.AppendRequest{Stream: info.ID, Offset: int64(lo), Batch: rec, SchemaVersion: ct.Schemas[0].Version})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Finalize(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.BatchCommit(ctx, []string{info.ID}); err != nil {
		t.Fatal(err)
	}
}

// readAll reads a done job's rows.
func readAll(t *testing.T, s *Store, j Job) [][]any {
	t.Helper()
	rows, err := s.Rows(j)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	err = rows.Read(context.Background(), 0, rows.Total, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]any, rec.NumCols())
			for c := range row {
				switch a := rec.Column(c).(type) {
				case *array.Int64:
					row[c] = a.Value(i)
				case *array.String:
					row[c] = strings.Clone(a.Value(i)) // the record's buffers are reused
				default:
					row[c] = a.ValueStr(i)
				}
			}
			out = append(out, row)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQueryStringsOutliveScan: string values a query keeps past the
// scan's batch (rows to sort, group keys, MAX) are the values read, not
// whatever the engine's recycled read buffers hold later. Before, they
// aliased those buffers: "SELECT x, s ... ORDER BY x" answered row 0
// with s = "row-1".
func TestQueryStringsOutliveScan(t *testing.T) {
	const n = 20000
	s, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "big", n)
	for id, q := range map[string]string{
		"sorted": "SELECT x, s FROM d.big ORDER BY x",
		"groups": "SELECT MIN(x) AS x, s FROM d.big GROUP BY s ORDER BY x",
		"max":    "SELECT x, (SELECT MAX(s) FROM d.big) AS s FROM d.big ORDER BY x LIMIT 1",
	} {
		if _, err := s.Insert("p", id, "US", Query{SQL: q}); err != nil {
			t.Fatal(err)
		}
		j := wait(t, s, id)
		if j.Err != nil {
			t.Fatalf("%s: %v", q, j.Err)
		}
		for i, row := range readAll(t, s, j) {
			want := fmt.Sprintf("row-%d", i)
			if id == "max" {
				want = "row-9999"
			}
			if row[0] != int64(i) || row[1] != want {
				t.Fatalf("%s: row %d is %v, want [%d %s]", q, i, row, i, want)
			}
		}
	}
}
