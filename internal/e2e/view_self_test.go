package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
)

// TestViewSelfReferenceThroughTablesAPI: a view's query that reads the
// view itself, directly or through another view, is refused by
// tables.patch (the Go client's Update with ViewQuery) and tables.update
// as CREATE OR REPLACE VIEW refuses it ("... cannot read itself"), and
// the view keeps its definition (reason invalid, as tables.insert answers
// other errors of a view's query). Before, the patch was taken, and every
// query of the view then failed sixteen levels deep.
func TestViewSelfReferenceThroughTablesAPI(t *testing.T) {
	e := newEnv(t)
	runStatement(t, e, "CREATE SCHEMA vs")
	runStatement(t, e, "CREATE TABLE vs.t (id INT64)")
	runStatement(t, e, "INSERT INTO vs.t VALUES (1), (2)")
	runStatement(t, e, "CREATE VIEW vs.v AS SELECT id FROM vs.t")
	runStatement(t, e, "CREATE VIEW vs.w AS SELECT id FROM vs.v")
	v := e.bq.Dataset("vs").Table("v")
	for _, q := range []string{"SELECT id FROM vs.v", "SELECT id FROM vs.w"} {
		_, err := v.Update(e.ctx, bigquery.TableMetadataToUpdate{ViewQuery: q}, "")
		if !isHTTP(err, http.StatusBadRequest, "invalid") || !strings.Contains(err.Error(), "cannot read itself") {
			t.Errorf("tables.patch of vs.v with %q: %v, want 400 invalid ... cannot read itself", q, err)
		}
	}
	// tables.update (PUT), as bq update --view sends it.
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPut, "http://"+e.srv.HTTPAddr()+"/bigquery/v2/projects/"+project+"/datasets/vs/tables/v",
		strings.NewReader(`{"tableReference": {"projectId": "`+project+`", "datasetId": "vs", "tableId": "v"}, "view": {"query": "SELECT id FROM vs.w", "useLegacySql": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "cannot read itself") {
		t.Errorf("tables.update of vs.v reading itself: %d %s, want 400", resp.StatusCode, body)
	}
	md, err := v.Metadata(e.ctx)
	if err != nil || md.ViewQuery != "SELECT id FROM vs.t" {
		t.Fatalf("vs.v after the refused updates: %+v %v", md, err)
	}
	if rows, _ := queryRows(t, e, e.bq.Query("SELECT COUNT(*) FROM vs.w")); rows[0][0] != int64(2) {
		t.Fatalf("vs.w: %v", rows)
	}
}
