package server_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"

	"github.com/bqstore/bqstore/internal/testkit"
)

// TestCatalogSurvivesKill creates datasets and tables through the official
// client on a child server, kills it with SIGKILL, restarts it on the same
// data directory and finds everything there.
func TestCatalogSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sch := bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		{Name: "rec", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
			{Name: "s", Type: bigquery.StringFieldType},
			{Name: "n", Type: bigquery.NumericFieldType, Repeated: true},
		}},
	}

	c := testkit.StartChild(t, dir)
	bq, err := bigquery.NewClient(ctx, "killp", testkit.RESTOptions(c.HTTPAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d1").Create(ctx, &bigquery.DatasetMetadata{Description: "first"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"t1", "t2"} {
		if err := bq.Dataset("d1").Table(name).Create(ctx, &bigquery.TableMetadata{Schema: sch}); err != nil {
			t.Fatal(err)
		}
	}
	md, err := bq.Dataset("d1").Table("t2").Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wider := append(bigquery.Schema{}, md.Schema...)
	wider = append(wider, &bigquery.FieldSchema{Name: "added", Type: bigquery.StringFieldType})
	if _, err := bq.Dataset("d1").Table("t2").Update(ctx, bigquery.TableMetadataToUpdate{Schema: wider}, md.ETag); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d1").Table("t1").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	bq.Close()
	c.Kill()

	c2 := testkit.StartChild(t, dir)
	bq2, err := bigquery.NewClient(ctx, "killp", testkit.RESTOptions(c2.HTTPAddr)...)
	if err != nil {
		t.Fatal(err)
	}
	defer bq2.Close()
	dmd, err := bq2.Dataset("d1").Metadata(ctx)
	if err != nil || dmd.Description != "first" {
		t.Fatalf("dataset after restart: %+v, %v", dmd, err)
	}
	if _, err := bq2.Dataset("d1").Table("t1").Metadata(ctx); err == nil {
		t.Fatal("deleted table t1 is back after restart")
	}
	md2, err := bq2.Dataset("d1").Table("t2").Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md2.Schema) != 3 || md2.Schema[2].Name != "added" || md2.Schema[1].Schema[1].Type != bigquery.NumericFieldType || !md2.Schema[1].Schema[1].Repeated {
		t.Fatalf("schema after restart: %+v", md2.Schema)
	}
	c2.Kill()
}
