package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
)

// Schema update options of a query job (JobConfigurationQuery
// schemaUpdateOptions), with WRITE_APPEND: the destination takes the
// result's schema where they allow it.
const (
	// AllowFieldAddition adds the result's columns the table lacks (at
	// its end, NULLABLE, or REPEATED as in the result).
	AllowFieldAddition = "ALLOW_FIELD_ADDITION"
	// AllowFieldRelaxation makes the table's REQUIRED columns NULLABLE
	// where the result's may be NULL (or the result lacks them).
	AllowFieldRelaxation = "ALLOW_FIELD_RELAXATION"
)

// ValidSchemaUpdateOption reports whether o is a schemaUpdateOptions
// value BigQuery knows.
func ValidSchemaUpdateOption(o string) bool {
	return o == AllowFieldAddition || o == AllowFieldRelaxation
}

// evolveDestination changes the schema of the existing table ct (named
// name) a WRITE_APPEND job appends rows of schema got to, as q's
// schemaUpdateOptions allow, and returns the table as it is then. The
// change is the catalog's (tables.patch's, checked by
// schema.CheckEvolution) and is committed before the job's rows, under
// the job: if the job then fails, is cancelled or the server stops
// before the rows' commit, the table keeps the added NULLABLE columns
// (or relaxed modes) without the rows. That is safe: every row the table
// has reads NULL in them, and running the job again appends its rows
// once (the schema now fits). BigQuery applies both in one step; the
// engine cannot drop a column to undo the change.
func (s *Store) evolveDestination(ctx context.Context, q Query, ct *catalog.Table, got *schema.Schema, name string) (*catalog.Table, error) {
	add, relax := slices.Contains(q.SchemaUpdateOptions, AllowFieldAddition), slices.Contains(q.SchemaUpdateOptions, AllowFieldRelaxation)
	if !add && !relax {
		return ct, nil
	}
	for try := 0; ; try++ {
		want := ct.Schema()
		next, changed := evolved(want, got, add, relax)
		if !changed {
			return ct, nil
		}
		// Nothing changes unless the rows can then be appended.
		if err := appendable(next, got, name); err != nil {
			return nil, err
		}
		nt, err := s.cat.UpdateTable(ctx, ct.ProjectID, ct.DatasetID, ct.TableID, catalog.TablePatch{Schema: next}, ct.ETag)
		if errors.Is(err, catalog.ErrPrecondition) && try < 3 {
			// The table changed meanwhile (another job, a patch):
			// evolve what it is now.
			if ct, err = s.cat.Table(ct.ProjectID, ct.DatasetID, ct.TableID); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("jobs: schemaUpdateOptions of %s: %w", name, err)
		}
		return nt, nil
	}
}

// evolved is table schema want with the result's extra columns added
// (add) and its REQUIRED columns the result may leave NULL relaxed
// (relax); changed reports whether it differs from want.
func evolved(want, got *schema.Schema, add, relax bool) (*schema.Schema, bool) {
	next := want.Clone()
	changed := false
	if relax {
		for i, f := range next.Fields {
			if f.EffectiveMode() != schema.Required {
				continue
			}
			if i >= len(got.Fields) || got.Fields[i].EffectiveMode() != schema.Required {
				f.Mode = schema.Nullable
				changed = true
			}
		}
	}
	if add {
		for _, g := range got.Fields[min(len(want.Fields), len(got.Fields)):] {
			f := g.Clone()
			if f.EffectiveMode() == schema.Required {
				f.Mode = schema.Nullable
			}
			next.Fields = append(next.Fields, f)
			changed = true
		}
	}
	return next, changed
}
