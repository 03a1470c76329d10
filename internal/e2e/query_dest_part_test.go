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
