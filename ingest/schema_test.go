package ingest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/testkit"
)

type hookFunc func(p ingest.Point, partition string, batch uint64) error

func (f hookFunc) At(p ingest.Point, partition string, batch uint64) error {
	return f(p, partition, batch)
}

// TestSchemaChangeMidStream adds a column while the pipeline runs (when
// batch 3's stream is created, before it reads a record); records using
// it start at batch 4, so every stream that maps them is created after
// the change. Nothing is lost, duplicated or dead-lettered.
//
// The change is made on the appending path (AfterCreate), not after a
// batch is DONE: the closer runs behind the appender, so "after batch 2
// is done" could come after record 120 was mapped (seen under load: 80
// dead letters).
func TestSchemaChangeMidStream(t *testing.T) {
	e := newEnv(t)
	table := e.table(t, "evolve")
	const n, perBatch, newFrom = 200, 40, 120 // batch 4 starts at record 120
	dir := t.TempDir()
	src := filepath.Join(dir, "in.ndjson")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		if i >= newFrom {
			fmt.Fprintf(w, `{"id":%d,"extra":"x%d"}`+"\n", i, i)
		} else {
			fmt.Fprintf(w, `{"id":%d}`+"\n", i)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tbl := e.bq.Dataset("d").Table("evolve")
	evolve := hookFunc(func(p ingest.Point, _ string, batch uint64) error {
		if p != ingest.AfterCreate || batch != 3 {
			return nil
		}
		md, err := tbl.Metadata(context.Background())
		if err != nil {
			return err
		}
		for _, f := range md.Schema {
			if f.Name == "extra" {
				return nil // batch 3's stream created again (a retry)
			}
		}
		schema := append(md.Schema, &bigquery.FieldSchema{Name: "extra", Type: bigquery.StringFieldType})
		_, err = tbl.Update(context.Background(), bigquery.TableMetadataToUpdate{Schema: schema}, md.ETag)
		return err
	})
	r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
		deadLetter: filepath.Join(dir, "dead.ndjson"), hooks: evolve,
		mutate: func(c *ingest.Config) { c.MaxBatchRows = perBatch }}
	if err := r.do(t); err != nil {
		t.Fatal(err)
	}
	if got := countLines(t, r.deadLetter); got != 0 {
		b, _ := os.ReadFile(r.deadLetter)
		t.Fatalf("%d dead letters:\n%s", got, b)
	}
	checkExactlyOnce(t, e.readIDs(t, table), n)
	it := tbl.Read(context.Background())
	extras := 0
	for {
		var row map[string]bigquery.Value
		err := testkit.NextRow(it, (*valueMap)(&row))
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		id := row["id"].(int64)
		if x, ok := row["extra"].(string); ok {
			extras++
			if x != fmt.Sprintf("x%d", id) {
				t.Errorf("id %d: extra = %q", id, x)
			}
		} else if id >= newFrom {
			t.Errorf("id %d: extra missing", id)
		}
	}
	if extras != n-newFrom {
		t.Errorf("%d rows with extra, want %d", extras, n-newFrom)
	}
}

// valueMap loads a row into a map.
type valueMap map[string]bigquery.Value

func (m *valueMap) Load(v []bigquery.Value, s bigquery.Schema) error {
	*m = valueMap{}
	for i, f := range s {
		(*m)[f.Name] = v[i]
	}
	return nil
}
