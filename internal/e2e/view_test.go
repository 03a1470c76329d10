package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestViewsAndPrimaryKeyOfficialClient: views made by CREATE VIEW and by
// tables.insert with view.query are described by tables.get, read by
// queries, refused by tabledata.list as BigQuery refuses them, dropped by
// DROP VIEW; PRIMARY KEY ... NOT ENFORCED is the table's
// tableConstraints.
func TestViewsAndPrimaryKeyOfficialClient(t *testing.T) {
	e := newEnv(t)
	runStatement(t, e, "CREATE SCHEMA v")
	runStatement(t, e, "CREATE TABLE v.t (id INT64, name STRING, PRIMARY KEY (id) NOT ENFORCED)")
	md, err := e.bq.Dataset("v").Table("t").Metadata(e.ctx)
	if err != nil || md.TableConstraints == nil || md.TableConstraints.PrimaryKey == nil || strings.Join(md.TableConstraints.PrimaryKey.Columns, ",") != "id" {
		t.Fatalf("tableConstraints after CREATE TABLE: %+v %v", md, err)
	}
	runStatement(t, e, "INSERT INTO v.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")

	qs := runStatement(t, e, "CREATE VIEW v.big OPTIONS(description='ids over 1') AS SELECT id, name FROM v.t WHERE id > 1")
	if qs.StatementType != "CREATE_VIEW" || qs.DDLOperationPerformed != "CREATE" {
		t.Fatalf("CREATE VIEW statistics %+v", qs)
	}
	md, err = e.bq.Dataset("v").Table("big").Metadata(e.ctx)
	if err != nil || md.Type != bigquery.ViewTable || md.ViewQuery != "SELECT id, name FROM v.t WHERE id > 1" || md.UseLegacySQL ||
		md.Description != "ids over 1" || len(md.Schema) != 2 || md.Schema[1].Name != "name" {
		t.Fatalf("tables.get of a view: %+v %v", md, err)
	}
	rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*), MIN(id) FROM v.big"))
	if rows[0][0] != int64(2) || rows[0][1] != int64(2) {
		t.Fatalf("query of a view: %v", rows)
	}
	// A view sees rows appended after it was created.
	runStatement(t, e, "INSERT INTO v.t VALUES (4, 'd')")
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*) FROM v.big")); rows[0][0] != int64(3) {
		t.Fatalf("view after INSERT: %v", rows)
	}

	// tables.insert with view.query; a view reading a view.
	if err := e.bq.Dataset("v").Table("names").Create(e.ctx, &bigquery.TableMetadata{ViewQuery: "SELECT name FROM v.big WHERE name != 'c'"}); err != nil {
		t.Fatal(err)
	}
	md, err = e.bq.Dataset("v").Table("names").Metadata(e.ctx)
	if err != nil || md.Type != bigquery.ViewTable || len(md.Schema) != 1 || md.Schema[0].Type != bigquery.StringFieldType {
		t.Fatalf("tables.get of a view made by tables.insert: %+v %v", md, err)
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*) FROM v.names")); rows[0][0] != int64(2) {
		t.Fatalf("view of a view: %v", rows)
	}
	tl := e.bq.Dataset("v").Tables(e.ctx)
	kinds := map[string]bigquery.TableType{}
	for {
		tb, err := tl.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tmd, err := tb.Metadata(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		kinds[tb.TableID] = tmd.Type
	}
	if kinds["t"] != bigquery.RegularTable || kinds["big"] != bigquery.ViewTable || kinds["names"] != bigquery.ViewTable {
		t.Fatalf("table types %v", kinds)
	}
	// tabledata.list on a view is BigQuery's 400.
	var row []bigquery.Value
	if err := e.bq.Dataset("v").Table("big").Read(e.ctx).Next(&row); !isHTTP(err, http.StatusBadRequest, "invalid") || !strings.Contains(err.Error(), "Cannot list a table of type VIEW.") {
		t.Fatalf("tabledata.list of a view: %v", err)
	}
	// The Storage Read API serves tables, not views.
	if _, err := e.session("projects/"+project+"/datasets/v/tables/big", storagepb.DataFormat_ARROW, 1, 0, nil, nil); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("read session on a view: %v, want InvalidArgument", err)
	}
	if _, err := e.bq.Query("INSERT INTO v.big VALUES (9, 'z')").Read(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalidQuery") {
		t.Fatalf("INSERT into a view: %v", err)
	}

	// PRIMARY KEY through ALTER TABLE.
	runStatement(t, e, "ALTER TABLE v.t DROP PRIMARY KEY")
	if md, err := e.bq.Dataset("v").Table("t").Metadata(e.ctx); err != nil || md.TableConstraints != nil && md.TableConstraints.PrimaryKey != nil {
		t.Fatalf("after DROP PRIMARY KEY: %+v %v", md.TableConstraints, err)
	}
	runStatement(t, e, "ALTER TABLE v.t DROP PRIMARY KEY IF EXISTS")
	runStatement(t, e, "ALTER TABLE v.t ADD PRIMARY KEY (NAME, id) NOT ENFORCED")
	if md, err := e.bq.Dataset("v").Table("t").Metadata(e.ctx); err != nil || md.TableConstraints == nil || strings.Join(md.TableConstraints.PrimaryKey.Columns, ",") != "name,id" {
		t.Fatalf("after ADD PRIMARY KEY: %+v %v", md.TableConstraints, err)
	}
	if _, err := e.bq.Query("ALTER TABLE v.t ADD PRIMARY KEY (id) NOT ENFORCED").Read(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalidQuery") {
		t.Fatalf("a second primary key: %v", err)
	}

	if qs := runStatement(t, e, "ALTER VIEW v.big SET OPTIONS(description='changed')"); qs.StatementType != "ALTER_VIEW" {
		t.Fatalf("ALTER VIEW statistics %+v", qs)
	}
	if md, err := e.bq.Dataset("v").Table("big").Metadata(e.ctx); err != nil || md.Description != "changed" || md.ViewQuery == "" {
		t.Fatalf("after ALTER VIEW: %+v %v", md, err)
	}
	if _, err := e.bq.Query("ALTER VIEW v.t SET OPTIONS(description='x')").Read(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalidQuery") {
		t.Fatalf("ALTER VIEW of a table: %v", err)
	}

	// DROP VIEW.
	if _, err := e.bq.Query("DROP VIEW v.t").Read(e.ctx); !isHTTP(err, http.StatusBadRequest, "invalidQuery") || !strings.Contains(err.Error(), "is a table, not a view") {
		t.Fatalf("DROP VIEW of a table: %v", err)
	}
	if qs := runStatement(t, e, "DROP VIEW v.names"); qs.StatementType != "DROP_VIEW" || qs.DDLOperationPerformed != "DROP" {
		t.Fatalf("DROP VIEW statistics %+v", qs)
	}
	if qs := runStatement(t, e, "DROP VIEW IF EXISTS v.names"); qs.DDLOperationPerformed != "SKIP" {
		t.Fatalf("DROP VIEW IF EXISTS statistics %+v", qs)
	}
	if qs := runStatement(t, e, "CREATE OR REPLACE VIEW v.big AS SELECT 1 AS one"); qs.DDLOperationPerformed != "REPLACE" {
		t.Fatalf("CREATE OR REPLACE VIEW statistics %+v", qs)
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT one FROM v.big")); len(rows) != 1 || rows[0][0] != int64(1) {
		t.Fatalf("replaced view: %v", rows)
	}
}
