package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"cloud.google.com/go/bigquery"
)

// TestTableDataListPageBytes: a tabledata.list page holds about 10 MB of
// rows however large the rows are: rows were formatted 256 at a time
// before the page's size was checked, so 30 rows of 1 MB made one 30 MB
// page (rows of 10 MB, BigQuery's limit, would make 2.5 GB ones).
func TestTableDataListPageBytes(t *testing.T) {
	e := newEnv(t)
	if err := e.bq.Dataset("d").Create(e.ctx, &bigquery.DatasetMetadata{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.bq.Query("CREATE TABLE d.t_wide AS SELECT n, REPEAT('x', 1000000) AS s FROM UNNEST([1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30]) AS n").Read(e.ctx); err != nil {
		t.Fatal(err)
	}
	rows, token := 0, ""
	for first := true; first || token != ""; first = false {
		q := url.Values{}
		if token != "" {
			q.Set("pageToken", token)
		}
		resp, err := http.Get("http://" + e.srv.HTTPAddr() + "/bigquery/v2/projects/local/datasets/d/tables/t_wide/data?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct {
			PageToken string
			Rows      []json.RawMessage
		}
		if err != nil || resp.StatusCode != 200 || json.Unmarshal(b, &page) != nil {
			t.Fatalf("tabledata.list: %d %v %.300s", resp.StatusCode, err, b)
		}
		if len(b) > 11<<20 || len(page.Rows) == 0 {
			t.Fatalf("a page of %d bytes, %d rows: want at most about 10 MB and a row", len(b), len(page.Rows))
		}
		rows += len(page.Rows)
		token = page.PageToken
	}
	if rows != 30 {
		t.Fatalf("%d rows over the pages, want 30", rows)
	}
}
