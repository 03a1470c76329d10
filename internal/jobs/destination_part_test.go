package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
)

// TestDestinationPartitioning: a query job's timePartitioning,
// rangePartitioning and clustering (JobConfigurationQuery) apply to the
// table the job creates or truncates (they were dropped: the table came
// out unpartitioned); a partitioning column the result lacks, or of a
// type that cannot partition, fails the job; an append to a table whose
// partitioning or clustering differs from the job's fails with
// BigQuery's "Incompatible table partitioning specification".
func TestDestinationPartitioning(t *testing.T) {
	s, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "src", 3)
	fillTable(t, cat, db, "trunc", 3)
	rp := catalog.Partitioning{
		RangePartitioning: []byte(`{"field":"x","range":{"end":"100","interval":"10","start":"0"}}`),
		Clustering:        []byte(`{"fields":["s"]}`),
	}
	run := func(id, table, disp string, p catalog.Partitioning) *Job {
		t.Helper()
		dst := &TableRef{Project: "p", Dataset: "d", Table: table}
		q := Query{SQL: "SELECT x, s, TIMESTAMP '2024-01-01' AS ts FROM d.src", Destination: dst, WriteDisposition: disp, Partitioning: &p}
		if _, err := s.Insert("p", id, "US", q); err != nil {
			t.Fatal(err)
		}
		j := wait(t, s, id)
		return &j
	}
	tp := catalog.Partitioning{TimePartitioning: []byte(`{"field":"ts","type":"DAY"}`), Clustering: []byte(`{"fields":["x","s"]}`)}
	for _, c := range []struct{ id, table, disp string }{{"create", "fresh", ""}, {"truncate", "trunc", WriteTruncate}} {
		if j := run(c.id, c.table, c.disp, tp); j.Err != nil {
			t.Fatalf("%s: %v", c.id, j.Err)
		}
		ct, err := cat.Table("p", "d", c.table)
		if err != nil {
			t.Fatal(err)
		}
		if string(ct.TimePartitioning) != string(tp.TimePartitioning) || string(ct.Clustering) != string(tp.Clustering) {
			t.Errorf("%s: table partitioning %s, clustering %s; want %s, %s", c.id, ct.TimePartitioning, ct.Clustering, tp.TimePartitioning, tp.Clustering)
		}
	}
	if j := run("range", "ranged", "", rp); j.Err != nil {
		t.Fatal(j.Err)
	} else if ct, _ := cat.Table("p", "d", "ranged"); string(ct.RangePartitioning) != string(rp.RangePartitioning) {
		t.Errorf("range: %s", ct.RangePartitioning)
	}
	// Appending with the table's own spec is fine; with another, not.
	if j := run("same", "fresh", WriteAppend, tp); j.Err != nil {
		t.Fatalf("append, same spec: %v", j.Err)
	}
	for _, c := range []struct {
		id, table, want string
		p               catalog.Partitioning
	}{
		{"other", "fresh", "Incompatible table partitioning specification", catalog.Partitioning{TimePartitioning: []byte(`{"field":"ts","type":"HOUR"}`)}},
		{"unpart", "src", "Incompatible table partitioning specification", tp},
		{"clust", "fresh", "Incompatible table clustering specification", catalog.Partitioning{TimePartitioning: tp.TimePartitioning, Clustering: []byte(`{"fields":["s"]}`)}},
	} {
		j := run(c.id, c.table, WriteAppend, c.p)
		var de *DestinationError
		if !errors.As(j.Err, &de) || de.Reason != "invalid" || !strings.Contains(de.Msg, c.want) {
			t.Errorf("%s: %v, want an invalid DestinationError %q", c.id, j.Err, c.want)
		}
	}
	for _, c := range []struct {
		id, want string
		p        catalog.Partitioning
	}{
		{"nofield", "cannot be found in the schema", catalog.Partitioning{TimePartitioning: []byte(`{"field":"nope","type":"DAY"}`)}},
		{"badtype", "can only be of type", catalog.Partitioning{TimePartitioning: []byte(`{"field":"s","type":"DAY"}`)}},
		{"badrange", "cannot be found in the schema", catalog.Partitioning{RangePartitioning: []byte(`{"field":"nope","range":{"end":"10","interval":"1","start":"0"}}`)}},
		{"badclust", "cannot be found in the schema", catalog.Partitioning{Clustering: []byte(`{"fields":["nope"]}`)}},
		{"both", "time partitioning and range partitioning", catalog.Partitioning{TimePartitioning: tp.TimePartitioning, RangePartitioning: rp.RangePartitioning}},
	} {
		j := run(c.id, "bad_"+c.id, "", c.p)
		var de *DestinationError
		if !errors.As(j.Err, &de) || de.Reason != "invalid" || !strings.Contains(de.Msg, c.want) {
			t.Errorf("%s: %v, want an invalid DestinationError %q", c.id, j.Err, c.want)
		}
		if _, err := cat.Table("p", "d", "bad_"+c.id); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("%s: the table exists after the failed job (%v)", c.id, err)
		}
	}
}

// TestSchemaUpdateOptionsAppend: with ALLOW_FIELD_ADDITION a WRITE_APPEND
// job adds the result's extra column to the destination (NULLABLE) and
// appends its rows (it failed: "Cannot add fields"). The column is added
// before the rows' commit: a job failing between the two leaves the
// column and no rows, and running it again appends its rows once.
func TestSchemaUpdateOptionsAppend(t *testing.T) {
	s, cat, db := engineStore(t, Options{})
	fillTable(t, cat, db, "src", 3)
	if _, err := cat.CreateTable(context.Background(), catalog.TableSpec{ProjectID: "p", DatasetID: "d", TableID: "dst",
		Schema: &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer, Mode: schema.Nullable}}}}); err != nil {
		t.Fatal(err)
	}
	dst := &TableRef{Project: "p", Dataset: "d", Table: "dst"}
	q := Query{SQL: "SELECT x, s FROM d.src", DefaultProject: "p", Destination: dst, WriteDisposition: WriteAppend}
	if j := runJob(t, s, "plain", q); j.Err == nil || !strings.Contains(j.Err.Error(), "Cannot add fields") {
		t.Fatalf("append without schemaUpdateOptions: %v", j.Err)
	}
	q.SchemaUpdateOptions = []string{AllowFieldAddition}
	fail := true
	s.opts.rowsCommit = func(after bool) error {
		if !after && fail {
			return errors.New("injected: the commit fails")
		}
		return nil
	}
	if j := runJob(t, s, "failed", q); j.Err == nil {
		t.Fatal("the injected failure did not fail the job")
	}
	ct, err := cat.Table("p", "d", "dst")
	if err != nil {
		t.Fatal(err)
	}
	if f := ct.Schema().Fields; len(f) != 2 || f[1].Name != "s" || f[1].EffectiveMode() != schema.Nullable {
		t.Fatalf("after a job failed at its commit: schema %v, want x, s NULLABLE", ct.Schema())
	}
	if n := tableRows(t, s, cat, "dst"); n != 0 {
		t.Fatalf("after a job failed at its commit: %d rows, want 0", n)
	}
	fail = false
	if j := runJob(t, s, "again", q); j.Err != nil {
		t.Fatal(j.Err)
	}
	if n := tableRows(t, s, cat, "dst"); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
}
