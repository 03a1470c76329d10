package e2e

import (
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
)

// TestDDLStatisticsOfficialClient: the query statistics the Go client
// reads for each kind of statement are BigQuery's: statementType,
// ddlOperationPerformed and ddlTargetTable for table DDL (a CTAS and a
// replace have no numDmlAffectedRows: that is for DML), numDmlAffectedRows
// for INSERT; ALTER TABLE RENAME TO and a script's temporary table
// through the client; UPDATE, DELETE, MERGE and TRUNCATE TABLE answer
// invalidQuery with the statement's position.
func TestDDLStatisticsOfficialClient(t *testing.T) {
	e := newEnv(t)
	runStatement(t, e, "CREATE SCHEMA st")
	target := func(qs *bigquery.QueryStatistics, table string) bool {
		return qs.DDLTargetTable != nil && qs.DDLTargetTable.ProjectID == project && qs.DDLTargetTable.DatasetID == "st" && qs.DDLTargetTable.TableID == table
	}
	for _, tc := range []struct {
		sql, typ, op, table string
		affected            int64
	}{
		{"CREATE TABLE st.t (x INT64)", "CREATE_TABLE", "CREATE", "t", 0},
		{"INSERT INTO st.t VALUES (1), (2), (3)", "INSERT", "", "", 3},
		{"INSERT INTO st.t SELECT x + 10 FROM st.t", "INSERT", "", "", 3},
		{"CREATE TABLE st.c AS SELECT x FROM st.t", "CREATE_TABLE_AS_SELECT", "CREATE", "c", 0},
		{"CREATE OR REPLACE TABLE st.c AS SELECT x FROM st.t WHERE x > 10", "CREATE_TABLE_AS_SELECT", "REPLACE", "c", 0},
		{"CREATE TABLE IF NOT EXISTS st.c (y STRING)", "CREATE_TABLE", "SKIP", "c", 0},
		{"CREATE VIEW st.v AS SELECT x FROM st.c", "CREATE_VIEW", "CREATE", "v", 0},
		{"CREATE OR REPLACE VIEW st.v AS SELECT x * 2 AS x2 FROM st.c", "CREATE_VIEW", "REPLACE", "v", 0},
		{"ALTER TABLE st.c SET OPTIONS(description='c')", "ALTER_TABLE", "ALTER", "c", 0},
		{"ALTER TABLE st.c RENAME TO c2", "ALTER_TABLE", "ALTER", "c", 0},
		{"DROP VIEW st.v", "DROP_VIEW", "DROP", "v", 0},
		{"DROP TABLE st.c2", "DROP_TABLE", "DROP", "c2", 0},
		{"DROP TABLE IF EXISTS st.c2", "DROP_TABLE", "SKIP", "c2", 0},
	} {
		qs := runStatement(t, e, tc.sql)
		if qs.StatementType != tc.typ || qs.DDLOperationPerformed != tc.op || qs.NumDMLAffectedRows != tc.affected ||
			(tc.table != "" && !target(qs, tc.table)) || (tc.table == "" && qs.DDLTargetTable != nil) {
			t.Errorf("%s: statementType %q ddlOperationPerformed %q ddlTargetTable %+v numDmlAffectedRows %d; want %q %q %q %d",
				tc.sql, qs.StatementType, qs.DDLOperationPerformed, qs.DDLTargetTable, qs.NumDMLAffectedRows, tc.typ, tc.op, tc.table, tc.affected)
		}
	}
	// The renamed table kept its rows.
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*) FROM st.t")); rows[0][0] != int64(6) {
		t.Fatalf("st.t rows %v", rows)
	}
	// A temporary table in a script.
	rows, _ := queryRows(t, e, e.bq.Query("CREATE TEMP TABLE tmp AS SELECT x FROM st.t WHERE x > 10; INSERT INTO tmp VALUES (100); SELECT SUM(x) AS s FROM tmp"))
	if len(rows) != 1 || rows[0][0] != int64(11+12+13+100) {
		t.Fatalf("temp table script: %v", rows)
	}
	if _, err := e.bq.Query("CREATE TEMP TABLE tmp (x INT64)").Read(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalid") ||
		!strings.Contains(err.Error(), "Use of CREATE TEMPORARY TABLE requires a script or session") {
		t.Fatalf("CREATE TEMP TABLE alone: %v", err)
	}
	// Row changes are not built yet: a positioned invalidQuery, the
	// table untouched.
	for _, sql := range []string{
		"UPDATE st.t SET x = 0 WHERE true",
		"DELETE FROM st.t WHERE true",
		"MERGE st.t USING st.t AS s ON false WHEN NOT MATCHED THEN INSERT ROW",
		"TRUNCATE TABLE st.t",
	} {
		_, err := e.bq.Query(sql).Read(e.ctx)
		if !isHTTP(err, http.StatusBadRequest, "invalidQuery") || !strings.Contains(err.Error(), "not supported yet by bqstore") || !strings.Contains(err.Error(), "at [1:1]") {
			t.Errorf("%s: %v, want invalidQuery 'not supported yet' at [1:1]", sql, err)
		}
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*) FROM st.t")); rows[0][0] != int64(6) {
		t.Fatalf("st.t rows after refused row changes %v", rows)
	}
}
