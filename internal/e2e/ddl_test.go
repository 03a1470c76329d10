package e2e

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/civil"
	"google.golang.org/api/iterator"
)

// runStatement runs one statement (or a script) as a job through the Go
// client and returns its query statistics.
func runStatement(t *testing.T, e *env, sql string) *bigquery.QueryStatistics {
	t.Helper()
	job, err := e.bq.Query(sql).Run(e.ctx)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	st, err := job.Wait(e.ctx)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if st.Err() != nil {
		t.Fatalf("%s: %v", sql, st.Err())
	}
	return st.Statistics.Details.(*bigquery.QueryStatistics)
}

// TestDDLAndInsertOfficialClient: CREATE SCHEMA/TABLE, INSERT, CTAS,
// ALTER, DROP and a script through client.Query, the results checked
// with tables.get and queries.
func TestDDLAndInsertOfficialClient(t *testing.T) {
	e := newEnv(t)
	qs := runStatement(t, e, "CREATE SCHEMA ddl OPTIONS(description='made by DDL')")
	if qs.StatementType != "CREATE_SCHEMA" || qs.DDLOperationPerformed != "CREATE" {
		t.Fatalf("CREATE SCHEMA statistics %+v", qs)
	}
	dm, err := e.bq.Dataset("ddl").Metadata(e.ctx)
	if err != nil || dm.Description != "made by DDL" {
		t.Fatalf("datasets.get: %+v %v", dm, err)
	}
	qs = runStatement(t, e, "CREATE SCHEMA IF NOT EXISTS ddl")
	if qs.DDLOperationPerformed != "SKIP" {
		t.Fatalf("CREATE SCHEMA IF NOT EXISTS: %+v", qs)
	}

	qs = runStatement(t, e, `CREATE TABLE ddl.t (
		id INT64 NOT NULL,
		name STRING(20) DEFAULT 'anon' OPTIONS(description='who'),
		n NUMERIC(10, 2),
		d DATE
	) OPTIONS(description='people', expiration_timestamp=TIMESTAMP '2099-01-01 00:00:00 UTC')`)
	if qs.StatementType != "CREATE_TABLE" || qs.DDLOperationPerformed != "CREATE" || qs.DDLTargetTable == nil || qs.DDLTargetTable.TableID != "t" || qs.DDLTargetTable.DatasetID != "ddl" {
		t.Fatalf("CREATE TABLE statistics %+v", qs)
	}
	md, err := e.bq.Dataset("ddl").Table("t").Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Description != "people" || md.ExpirationTime.Year() != 2099 || len(md.Schema) != 4 ||
		!md.Schema[0].Required || md.Schema[1].DefaultValueExpression != "'anon'" || md.Schema[1].Description != "who" ||
		md.Schema[1].MaxLength != 20 || md.Schema[2].Precision != 10 || md.Schema[2].Scale != 2 || md.Schema[3].Type != bigquery.DateFieldType {
		t.Fatalf("tables.get %+v schema %+v %+v", md, md.Schema[0], md.Schema[1])
	}
	if _, err := e.bq.Query("CREATE TABLE ddl.t (x INT64)").Read(e.ctx); !isHTTP(err, http.StatusConflict, "duplicate") {
		t.Fatalf("CREATE TABLE of an existing table: %v, want 409 duplicate", err)
	}
	if qs := runStatement(t, e, "CREATE TABLE IF NOT EXISTS ddl.t (x INT64)"); qs.DDLOperationPerformed != "SKIP" {
		t.Fatalf("IF NOT EXISTS: %+v", qs)
	}

	// INSERT VALUES: defaults, literal coercion, one atomic append.
	qs = runStatement(t, e, "INSERT INTO ddl.t (id, name, n, d) VALUES (1, DEFAULT, 2.5, '2024-02-29'), (2, 'bob', NULL, NULL), (3, 'cy', 7, DATE '2024-01-01')")
	if qs.StatementType != "INSERT" || qs.NumDMLAffectedRows != 3 {
		t.Fatalf("INSERT statistics %+v", qs)
	}
	// INSERT SELECT, columns left out take their default.
	qs = runStatement(t, e, "INSERT ddl.t (id) SELECT id + 10 FROM ddl.t WHERE id < 3")
	if qs.NumDMLAffectedRows != 2 {
		t.Fatalf("INSERT SELECT statistics %+v", qs)
	}
	rows, _ := queryRows(t, e, e.bq.Query("SELECT id, name, n, d FROM ddl.t ORDER BY id"))
	got := []string{}
	for _, r := range rows {
		var b strings.Builder
		for i, v := range r {
			if i > 0 {
				b.WriteByte(' ')
			}
			if rat, ok := v.(*big.Rat); ok {
				b.WriteString(rat.FloatString(2))
			} else {
				b.WriteString(strings.TrimSpace(strings.ReplaceAll(fmtValue(v), "\n", " ")))
			}
		}
		got = append(got, b.String())
	}
	want := "1 anon 2.50 2024-02-29|2 bob <nil> <nil>|3 cy 7.00 2024-01-01|11 anon <nil> <nil>|12 anon <nil> <nil>"
	if strings.Join(got, "|") != want {
		t.Fatalf("rows after INSERT:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	// Query parameters in VALUES, as client libraries send them.
	pq := e.bq.Query("INSERT INTO ddl.t (id, name, d) VALUES (@id, @name, @day)")
	pq.Parameters = []bigquery.QueryParameter{{Name: "id", Value: 21}, {Name: "name", Value: "param"}, {Name: "day", Value: civil.Date{Year: 2025, Month: 3, Day: 4}}}
	if _, err := pq.Read(e.ctx); err != nil {
		t.Fatalf("INSERT with parameters: %v", err)
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT name, CAST(d AS STRING) FROM ddl.t WHERE id = 21")); len(rows) != 1 || rows[0][0] != "param" || rows[0][1] != "2025-03-04" {
		t.Fatalf("row inserted with parameters: %v", rows)
	}

	// The jobs.query fast path of a DML statement.
	if _, err := e.bq.Query("INSERT INTO ddl.t (id) VALUES (20)").Read(e.ctx); err != nil {
		t.Fatalf("INSERT through jobs.query: %v", err)
	}
	// Errors: NULL into a NOT NULL column, a type that does not coerce;
	// nothing of a failed INSERT is visible.
	_, err = e.bq.Query("INSERT INTO ddl.t (id, name) VALUES (30, 'x'), (NULL, 'y')").Read(e.ctx)
	if !isHTTP(err, http.StatusBadRequest, "invalidQuery") {
		t.Fatalf("NULL into NOT NULL: %v", err)
	}
	_, err = e.bq.Query("INSERT INTO ddl.t (id) VALUES ('x')").Read(e.ctx)
	if !isHTTP(err, http.StatusBadRequest, "invalidQuery") || !strings.Contains(err.Error(), "Value has type STRING which cannot be inserted into column id, which has type INT64 at [1:32]") {
		t.Fatalf("STRING into INT64: %v", err)
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*) FROM ddl.t")); rows[0][0] != int64(7) {
		t.Fatalf("rows after failed INSERTs: %v, want 7", rows)
	}

	// CREATE TABLE AS SELECT, then CREATE OR REPLACE.
	qs = runStatement(t, e, "CREATE TABLE ddl.c AS SELECT id, name FROM ddl.t WHERE id > 10")
	if qs.StatementType != "CREATE_TABLE_AS_SELECT" || qs.DDLOperationPerformed != "CREATE" {
		t.Fatalf("CTAS statistics %+v", qs)
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*), SUM(id) FROM ddl.c")); rows[0][0] != int64(4) || rows[0][1] != int64(64) {
		t.Fatalf("CTAS rows %v", rows)
	}
	qs = runStatement(t, e, "CREATE OR REPLACE TABLE ddl.c (z BOOL)")
	if qs.DDLOperationPerformed != "REPLACE" {
		t.Fatalf("CREATE OR REPLACE statistics %+v", qs)
	}
	if md, err := e.bq.Dataset("ddl").Table("c").Metadata(e.ctx); err != nil || len(md.Schema) != 1 || md.Schema[0].Name != "z" {
		t.Fatalf("replaced table %+v %v", md, err)
	}

	// PARTITION BY and CLUSTER BY are the REST members, as dbt writes them.
	runStatement(t, e, "CREATE TABLE ddl.p (ts TIMESTAMP, id INT64) PARTITION BY DATE(ts) CLUSTER BY id")
	md, err = e.bq.Dataset("ddl").Table("p").Metadata(e.ctx)
	if err != nil || md.TimePartitioning == nil || md.TimePartitioning.Field != "ts" || md.TimePartitioning.Type != bigquery.DayPartitioningType ||
		md.Clustering == nil || strings.Join(md.Clustering.Fields, ",") != "id" {
		t.Fatalf("partitioned table: %+v %v", md, err)
	}
	runStatement(t, e, "create or replace table ddl.r\npartition by range_bucket(id, generate_array(0, 100, 10))\nOPTIONS()\nas (\n  select id from ddl.t\n)")
	md, err = e.bq.Dataset("ddl").Table("r").Metadata(e.ctx)
	if err != nil || md.RangePartitioning == nil || md.RangePartitioning.Field != "id" || md.RangePartitioning.Range.End != 100 || md.RangePartitioning.Range.Interval != 10 {
		t.Fatalf("range-partitioned CTAS: %+v %v", md, err)
	}
	if _, err := e.bq.Query("CREATE TABLE ddl.bad (s STRING) PARTITION BY s").Read(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalidQuery") {
		t.Fatalf("PARTITION BY a STRING column: %v", err)
	}

	// ALTER TABLE.
	qs = runStatement(t, e, "ALTER TABLE ddl.t ADD COLUMN IF NOT EXISTS name STRING, ADD COLUMN score FLOAT64 OPTIONS(description='s'), SET OPTIONS(description='altered')")
	if qs.StatementType != "ALTER_TABLE" || qs.DDLOperationPerformed != "ALTER" {
		t.Fatalf("ALTER statistics %+v", qs)
	}
	md, err = e.bq.Dataset("ddl").Table("t").Metadata(e.ctx)
	if err != nil || md.Description != "altered" || len(md.Schema) != 5 || md.Schema[4].Name != "score" || md.Schema[4].Description != "s" {
		t.Fatalf("after ALTER: %+v %v", md, err)
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(score) FROM ddl.t")); rows[0][0] != int64(0) {
		t.Fatalf("new column: %v", rows)
	}

	// ALTER COLUMN, labels, ALTER SCHEMA.
	runStatement(t, e, "ALTER TABLE ddl.t ALTER COLUMN id DROP NOT NULL, ALTER COLUMN name SET OPTIONS(description='renamed'), ALTER COLUMN name SET DEFAULT 'nobody', ALTER COLUMN name SET DATA TYPE STRING(30), ALTER COLUMN score SET DEFAULT 1.5, SET OPTIONS(labels=[('team', 'data'), ('env', '')])")
	md, err = e.bq.Dataset("ddl").Table("t").Metadata(e.ctx)
	if err != nil || md.Schema[0].Required || md.Schema[1].Description != "renamed" || md.Schema[1].DefaultValueExpression != "'nobody'" || md.Schema[1].MaxLength != 30 ||
		md.Schema[4].DefaultValueExpression != "1.5" || md.Labels["team"] != "data" || len(md.Labels) != 2 {
		t.Fatalf("after ALTER COLUMN: %+v %+v %v", md.Schema[1], md.Labels, err)
	}
	runStatement(t, e, "INSERT INTO ddl.t (id) VALUES (40)")
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT name, score FROM ddl.t WHERE id = 40")); len(rows) != 1 || rows[0][0] != "nobody" || rows[0][1] != 1.5 {
		t.Fatalf("new defaults: %v", rows)
	}
	if _, err := e.bq.Query("ALTER TABLE ddl.t ALTER COLUMN id SET DATA TYPE STRING").Read(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalid") {
		t.Fatalf("a type change: %v", err)
	}
	if qs := runStatement(t, e, "ALTER SCHEMA ddl SET OPTIONS(description='changed', labels=[('k', 'v')])"); qs.StatementType != "ALTER_SCHEMA" || qs.DDLOperationPerformed != "ALTER" {
		t.Fatalf("ALTER SCHEMA statistics %+v", qs)
	}
	if dm, err := e.bq.Dataset("ddl").Metadata(e.ctx); err != nil || dm.Description != "changed" || dm.Labels["k"] != "v" {
		t.Fatalf("after ALTER SCHEMA: %+v %v", dm, err)
	}

	// A script: statements in order, the last SELECT is the result.
	rows, it := queryRows(t, e, e.bq.Query("CREATE TABLE ddl.s (a INT64); INSERT INTO ddl.s VALUES (1), (2); SELECT SUM(a) AS total FROM ddl.s;"))
	if len(rows) != 1 || rows[0][0] != int64(3) || it.Schema[0].Name != "total" {
		t.Fatalf("script result %v", rows)
	}
	job, err := e.bq.Query("DROP TABLE ddl.s; SELECT 1").Run(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Wait(e.ctx)
	if err != nil || st.Err() != nil {
		t.Fatalf("script: %v %v", err, st.Err())
	}
	if qs := st.Statistics.Details.(*bigquery.QueryStatistics); qs.StatementType != "SCRIPT" || st.Statistics.NumChildJobs != 2 {
		t.Fatalf("script statistics %+v, %d children", qs, st.Statistics.NumChildJobs)
	}
	// Its two statements are its child jobs (jobs.list parentJobId),
	// not every job.
	kids := job.Children(e.ctx)
	for i := 0; ; i++ {
		c, err := kids.Next()
		if errors.Is(err, iterator.Done) {
			if i != 2 {
				t.Fatalf("%d children of a script, want 2", i)
			}
			break
		}
		if err != nil || c.LastStatus().Statistics.ParentJobID != job.ID() {
			t.Fatalf("child of a script: %v %v", c, err)
		}
	}

	// Statements bqstore does not run yet say so.
	_, err = e.bq.Query("UPDATE ddl.t SET id = 1 WHERE true").Read(e.ctx)
	if !isHTTP(err, http.StatusBadRequest, "invalidQuery") || !strings.Contains(err.Error(), "not supported yet by bqstore: UPDATE") {
		t.Fatalf("UPDATE: %v", err)
	}

	// DROP.
	if qs := runStatement(t, e, "DROP TABLE ddl.c"); qs.StatementType != "DROP_TABLE" || qs.DDLOperationPerformed != "DROP" {
		t.Fatalf("DROP statistics %+v", qs)
	}
	if _, err := e.bq.Dataset("ddl").Table("c").Metadata(e.ctx); !isHTTP(err, http.StatusNotFound, "notFound") {
		t.Fatalf("tables.get after DROP: %v", err)
	}
	if qs := runStatement(t, e, "DROP TABLE IF EXISTS ddl.c"); qs.DDLOperationPerformed != "SKIP" {
		t.Fatalf("DROP IF EXISTS statistics %+v", qs)
	}
	if _, err := e.bq.Query("DROP TABLE ddl.c").Read(e.ctx); !isHTTP(err, http.StatusNotFound, "notFound") {
		t.Fatalf("DROP of a missing table: %v", err)
	}
	if _, err := e.bq.Query("DROP SCHEMA ddl").Read(e.ctx); err == nil {
		t.Fatal("DROP SCHEMA of a dataset with tables succeeded without CASCADE")
	}
	if qs := runStatement(t, e, "DROP SCHEMA ddl CASCADE"); qs.StatementType != "DROP_SCHEMA" || qs.DDLOperationPerformed != "DROP" {
		t.Fatalf("DROP SCHEMA statistics %+v", qs)
	}
	if _, err := e.bq.Dataset("ddl").Metadata(e.ctx); !isHTTP(err, http.StatusNotFound, "notFound") {
		t.Fatalf("datasets.get after DROP SCHEMA: %v", err)
	}
}

// fmtValue prints a query value: civil dates as written, others with %v.
func fmtValue(v bigquery.Value) string {
	if v == nil {
		return "<nil>"
	}
	return fmt.Sprint(v)
}
