package e2e

import (
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
)

// TestQueryDestinationPartitioning: bq query --destination_table
// --time_partitioning_field --clustering_fields (the Go client's
// QueryConfig.TimePartitioning and Clustering) makes a partitioned,
// clustered table (both were silently dropped); jobs.get echoes them;
// an append that asks for another partitioning fails with BigQuery's
// "Incompatible table partitioning specification"; a
// destinationEncryptionConfiguration, which bqstore cannot honour, is a
// 400 rather than ignored.
func TestQueryDestinationPartitioning(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_src", 10)
	q := func(sql, write string) *bigquery.Query {
		q := e.bq.Query(sql)
		q.Dst = e.bq.Dataset("d").Table("part")
		q.WriteDisposition = bigquery.TableWriteDisposition(write)
		q.TimePartitioning = &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: "ts"}
		q.Clustering = &bigquery.Clustering{Fields: []string{"id"}}
		return q
	}
	const sql = "SELECT id, name, TIMESTAMP '2024-05-01 10:00:00' AS ts FROM d.t_src"
	cq := q(sql, "")
	cq.JobID = "part_job"
	if err := runQuery(t, e, cq); err != nil {
		t.Fatal(err)
	}
	md, err := e.bq.Dataset("d").Table("part").Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tp := md.TimePartitioning; tp == nil || tp.Field != "ts" || tp.Type != bigquery.DayPartitioningType {
		t.Errorf("timePartitioning %+v, want DAY on ts", tp)
	}
	if c := md.Clustering; c == nil || len(c.Fields) != 1 || c.Fields[0] != "id" {
		t.Errorf("clustering %+v, want [id]", c)
	}
	job, err := e.bq.JobFromID(e.ctx, "part_job")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := job.Config()
	if qc := cfg.(*bigquery.QueryConfig); qc.TimePartitioning == nil || qc.TimePartitioning.Field != "ts" || qc.Clustering == nil {
		t.Errorf("jobs.get: timePartitioning %+v clustering %+v", qc.TimePartitioning, qc.Clustering)
	}
	if err := runQuery(t, e, q(sql, "WRITE_APPEND")); err != nil {
		t.Fatalf("append with the table's partitioning: %v", err)
	}
	hq := q(sql, "WRITE_APPEND")
	hq.TimePartitioning.Type = bigquery.HourPartitioningType
	err = runQuery(t, e, hq)
	if !isHTTP(err, http.StatusBadRequest, "invalid") || !strings.Contains(err.Error(), "Incompatible table partitioning specification") {
		t.Fatalf("append with another partitioning: %v", err)
	}
	bq := q("SELECT name FROM d.t_src", "")
	bq.Dst = e.bq.Dataset("d").Table("part_bad")
	err = runQuery(t, e, bq)
	if !isHTTP(err, http.StatusBadRequest, "invalid") || !strings.Contains(err.Error(), "cannot be found in the schema") {
		t.Fatalf("partitioning on a column the result lacks: %v", err)
	}
	eq := q(sql, "WRITE_TRUNCATE")
	eq.DestinationEncryptionConfig = &bigquery.EncryptionConfig{KMSKeyName: "projects/p/locations/us/keyRings/r/cryptoKeys/k"}
	if _, err := eq.Run(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalid") {
		t.Fatalf("destinationEncryptionConfiguration: %v, want 400 invalid", err)
	}
}

// TestQuerySchemaUpdateOptions: a WRITE_APPEND query job with
// schemaUpdateOptions (the Go client's QueryConfig.SchemaUpdateOptions)
// ALLOW_FIELD_ADDITION adds the result's extra columns to the
// destination as NULLABLE, and ALLOW_FIELD_RELAXATION makes its REQUIRED
// columns the result may leave NULL NULLABLE (the job failed with
// "Cannot add fields" as if the option were not given); without them the
// job still fails; with another write disposition they are a 400, as in
// BigQuery ("Schema update options should only be specified with
// WRITE_APPEND disposition, or with WRITE_TRUNCATE disposition on a table
// partition").
func TestQuerySchemaUpdateOptions(t *testing.T) {
	e := newEnv(t)
	e.fillSimple("t_src", 4)
	dst := e.bq.Dataset("d").Table("evolve")
	if err := dst.Create(e.ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType},
	}}); err != nil {
		t.Fatal(err)
	}
	strict := e.bq.Dataset("d").Table("strict")
	if err := strict.Create(e.ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	}}); err != nil {
		t.Fatal(err)
	}
	q := func(sql, write string, opts ...string) *bigquery.Query {
		q := e.bq.Query(sql)
		q.Dst = dst
		q.WriteDisposition = bigquery.TableWriteDisposition(write)
		q.SchemaUpdateOptions = opts
		return q
	}
	const add = "SELECT id, name FROM d.t_src WHERE id < 2"
	if err := runQuery(t, e, q(add, "WRITE_APPEND")); !isHTTP(err, http.StatusBadRequest, "invalid") || !strings.Contains(err.Error(), "Cannot add fields") {
		t.Fatalf("append of a new column without ALLOW_FIELD_ADDITION: %v", err)
	}
	if err := runQuery(t, e, q(add, "WRITE_APPEND", "ALLOW_FIELD_ADDITION")); err != nil {
		t.Fatalf("ALLOW_FIELD_ADDITION: %v", err)
	}
	md, err := dst.Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Schema) != 2 || md.Schema[1].Name != "name" || md.Schema[1].Required || md.NumRows != 2 {
		t.Fatalf("after ALLOW_FIELD_ADDITION: schema %+v, %d rows; want id, name NULLABLE and 2 rows", md.Schema, md.NumRows)
	}
	// A query's columns are NULLABLE: appending them to a REQUIRED
	// column is BigQuery's "Field id has changed mode from REQUIRED to
	// NULLABLE" (bqstore appended the NULL) unless the column relaxes.
	const relax = "SELECT CAST(NULL AS INT64) AS id"
	rq := q(relax, "WRITE_APPEND")
	rq.Dst = strict
	if err := runQuery(t, e, rq); !isHTTP(err, http.StatusBadRequest, "invalid") || !strings.Contains(err.Error(), "has changed mode from REQUIRED to NULLABLE") {
		t.Fatalf("a NULLABLE column appended to a REQUIRED one without ALLOW_FIELD_RELAXATION: %v", err)
	}
	rq = q(relax, "WRITE_APPEND", "ALLOW_FIELD_RELAXATION")
	rq.Dst = strict
	if err := runQuery(t, e, rq); err != nil {
		t.Fatalf("ALLOW_FIELD_RELAXATION: %v", err)
	}
	if md, err = strict.Metadata(e.ctx); err != nil || md.Schema[0].Required || md.NumRows != 1 {
		t.Fatalf("after ALLOW_FIELD_RELAXATION: %+v %v; want id NULLABLE and 1 row", md, err)
	}
	if _, err := q(add, "WRITE_TRUNCATE", "ALLOW_FIELD_ADDITION").Run(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalid") {
		t.Fatalf("schemaUpdateOptions with WRITE_TRUNCATE: %v, want 400", err)
	}
	if _, err := q(add, "WRITE_APPEND", "ALLOW_EVERYTHING").Run(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalid") {
		t.Fatalf("schemaUpdateOptions ALLOW_EVERYTHING: %v, want 400", err)
	}
}
