package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
)

// TestDryRunDestination: a dry run with a destinationTable answers what
// the run would before it writes: partitioning or clustering that does
// not fit the result's schema, an append whose partitioning differs
// from the table's, a result a WRITE_APPEND cannot append without (or
// with) schemaUpdateOptions, CREATE_NEVER of a missing table, a view,
// a script or DDL with a destination. It checks and changes nothing:
// ALLOW_FIELD_ADDITION adds no column. Before, each dry run succeeded.
func TestDryRunDestination(t *testing.T) {
	s, cat, db := engineStore(t, Options{})
	ctx := context.Background()
	fillTable(t, cat, db, "src", 3)
	if _, err := cat.CreateTable(ctx, catalog.TableSpec{ProjectID: "p", DatasetID: "d", TableID: "narrow",
		Schema: &schema.Schema{Fields: []*schema.Field{{Name: "x", Type: schema.Integer, Mode: schema.Nullable}}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, s, "v", "CREATE VIEW d.v AS SELECT x FROM d.src")
	tp := &catalog.Partitioning{TimePartitioning: []byte(`{"field":"ts","type":"DAY"}`)}
	dst := func(t string) *TableRef { return &TableRef{Project: "p", Dataset: "d", Table: t} }
	const sel = "SELECT x, s, TIMESTAMP '2024-01-01' AS ts FROM d.src"
	for _, c := range []struct {
		name string
		q    Query
		want string // "" : the dry run succeeds
	}{
		{"new table, partitioned", Query{SQL: sel, Destination: dst("fresh"), Partitioning: tp}, ""},
		{"partitioning field missing", Query{SQL: sel, Destination: dst("fresh"), Partitioning: &catalog.Partitioning{TimePartitioning: []byte(`{"field":"nope","type":"DAY"}`)}}, "cannot be found in the schema"},
		{"clustering field missing", Query{SQL: sel, Destination: dst("fresh"), Partitioning: &catalog.Partitioning{Clustering: []byte(`{"fields":["nope"]}`)}}, "cannot be found in the schema"},
		{"append, other partitioning", Query{SQL: sel, Destination: dst("src"), WriteDisposition: WriteAppend, Partitioning: tp}, "Incompatible table partitioning specification"},
		{"append, extra column", Query{SQL: "SELECT x, s FROM d.src", Destination: dst("narrow"), WriteDisposition: WriteAppend}, "Cannot add fields"},
		{"append, ALLOW_FIELD_ADDITION", Query{SQL: "SELECT x, s FROM d.src", Destination: dst("narrow"), WriteDisposition: WriteAppend, SchemaUpdateOptions: []string{AllowFieldAddition}}, ""},
		{"append, ALLOW_FIELD_ADDITION, other type", Query{SQL: "SELECT s AS x FROM d.src", Destination: dst("narrow"), WriteDisposition: WriteAppend, SchemaUpdateOptions: []string{AllowFieldAddition}}, "changed type"},
		{"CREATE_NEVER, missing", Query{SQL: sel, Destination: dst("missing"), CreateDisposition: CreateNever}, "Not found: Table p:d.missing"},
		{"a view", Query{SQL: sel, Destination: dst("v"), WriteDisposition: WriteTruncate}, "Cannot write to a view"},
		{"a script", Query{SQL: "SELECT 1; SELECT 2", Destination: dst("fresh")}, "cannot be set for scripts"},
		{"DDL", Query{SQL: "CREATE TABLE d.z (a INT64)", Destination: dst("fresh")}, "Cannot set destination table in jobs with DDL statements"},
	} {
		_, err := s.DryRun(ctx, "p", "US", c.q)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case c.want != "":
			// The run fails alike (and writes nothing).
			if j := runJob(t, s, "run_"+strings.ReplaceAll(c.name, " ", "_"), c.q); j.Err == nil || j.Err.Error() != err.Error() {
				t.Errorf("%s: the run's error %v, the dry run's %v", c.name, j.Err, err)
			}
		}
	}
	ct, err := cat.Table("p", "d", "narrow")
	if err != nil || len(ct.Schema().Fields) != 1 {
		t.Fatalf("d.narrow after the dry runs: %v %v, want its one column", ct.Schema(), err)
	}
	if _, err := cat.Table("p", "d", "fresh"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("d.fresh after the dry runs: %v, want not found", err)
	}
}
