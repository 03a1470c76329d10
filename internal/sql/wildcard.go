package sql

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Wildcard tables: FROM `p.d.prefix*` reads every table of the dataset
// whose name starts with prefix, as BigQuery documents: the columns are
// those of the most recently created matching table (a table without
// one of them reads NULL), plus the pseudo-column _TABLE_SUFFIX (the
// rest of each table's name; not in SELECT *). The WHERE clause's
// conjuncts that name only _TABLE_SUFFIX choose the tables to read
// before any is opened (pruning: the others are neither read nor
// billed).

// WildcardTable is a table a wildcard name matches.
type WildcardTable struct {
	Name    TableName // with the project and dataset resolved
	Created time.Time
}

// WildcardLister lists the tables a wildcard name (Table ends with "*")
// matches: the tables (not views) of its dataset whose names start with
// the prefix. Its errors are returned as they are.
type WildcardLister func(ctx context.Context, name TableName) ([]WildcardTable, error)

// suffixColumn is the pseudo-column of a wildcard table.
const suffixColumn = "_TABLE_SUFFIX"

// wildcardRelation reads the tables the wildcard name n matches; where
// is the enclosing SELECT's WHERE (for pruning), nil if none.
func (r *runner) wildcardRelation(ctx context.Context, n TableName, qual string, where *Span) (*relation, error) {
	if r.opts.Wildcard == nil {
		return nil, notSupported(r.src, n.Pos, "wildcard tables")
	}
	prefix := strings.TrimSuffix(n.Table, "*")
	if strings.Contains(prefix, "*") {
		return nil, r.errf(n.Pos, "Invalid table name: %s (a wildcard must be the last character)", n.Table)
	}
	tables, err := r.opts.Wildcard(ctx, n)
	if err != nil {
		return nil, err
	}
	if len(tables) == 0 {
		return nil, r.errf(n.Pos, "Table %s does not match any table", n.Table)
	}
	// The schema: the most recently created table's.
	sort.SliceStable(tables, func(i, j int) bool { return tables[i].Created.Before(tables[j].Created) })
	newest, err := r.open(ctx, tables[len(tables)-1].Name)
	if err != nil {
		return nil, err
	}
	keep, err := r.pruneSuffixes(tables, prefix, where)
	if err != nil {
		return nil, err
	}
	qual = strings.ToLower(qual)
	rel := &relation{schema: &schema.Schema{}, vars: map[string]bool{qual: true}}
	for _, f := range newest.Schema().Fields {
		rel.cols = append(rel.cols, relCol{internal: f.Name, qual: qual, name: f.Name, star: true, unq: true})
		rel.schema.Fields = append(rel.schema.Fields, f)
	}
	rel.cols = append(rel.cols, relCol{internal: suffixColumn, qual: qual, name: suffixColumn, unq: true})
	rel.schema.Fields = append(rel.schema.Fields, &schema.Field{Name: suffixColumn, Type: schema.String, Mode: schema.Nullable})
	type member struct {
		t      Table
		suffix string
	}
	var members []member
	for i, wt := range tables {
		if !keep[i] {
			continue
		}
		t, err := r.open(ctx, wt.Name)
		if err != nil {
			return nil, err
		}
		// A column of another type than the schema's cannot be read as
		// one column.
		for _, f := range t.Schema().Fields {
			if k := rel.index(f.Name); k >= 0 && !sameType(rel.schema.Fields[k], f) {
				return nil, r.errf(n.Pos, "Cannot read field %s of type %s in table %s as type %s of the wildcard table's schema (the most recently created table's)",
					f.Name, typeName(f), wt.Name.Table, typeName(rel.schema.Fields[k]))
			}
		}
		members = append(members, member{t: t, suffix: strings.TrimPrefix(wt.Name.Table, prefix)})
	}
	rel.scan = func(ctx context.Context, cols []string, fn func(arrow.RecordBatch, int) error) error {
		for _, m := range members {
			var have []string
			for _, c := range cols {
				if !strings.EqualFold(c, suffixColumn) && m.t.Schema().Lookup(c) >= 0 {
					have = append(have, c)
				}
			}
			err := m.t.Scan(ctx, have, func(rec arrow.RecordBatch) error {
				r.bytes += logicalBytes(rec)
				n := int(rec.NumRows())
				if len(cols) == 0 {
					return fn(nil, n)
				}
				var fields []arrow.Field
				var arrs []arrow.Array
				k := 0
				for _, c := range cols {
					f := rel.schema.Fields[rel.index(c)]
					af := schema.FieldToArrow(f)
					af.Name = c
					var a arrow.Array
					switch {
					case strings.EqualFold(c, suffixColumn):
						b := array.NewStringBuilder(memory.DefaultAllocator)
						for i := 0; i < n; i++ {
							b.Append(m.suffix)
						}
						a = b.NewArray()
						b.Release()
					case k < len(have) && strings.EqualFold(have[k], c):
						a = rec.Column(k)
						a.Retain()
						af.Type = a.DataType()
						k++
					default:
						a = array.MakeArrayOfNull(memory.DefaultAllocator, af.Type, n)
					}
					af.Nullable = true
					fields = append(fields, af)
					arrs = append(arrs, a)
				}
				out := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
				for _, a := range arrs {
					a.Release()
				}
				defer out.Release()
				return fn(out, n)
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return rel, nil
}

// sameType reports whether two fields hold the same type of values.
func sameType(a, b *schema.Field) bool {
	return typeName(a) == typeName(b) && (a.EffectiveMode() == schema.Repeated) == (b.EffectiveMode() == schema.Repeated)
}

// pruneSuffixes evaluates, for each table, the WHERE conjuncts that name
// only _TABLE_SUFFIX, with the table's suffix: a table for which one is
// not TRUE is not read.
func (r *runner) pruneSuffixes(tables []WildcardTable, prefix string, where *Span) ([]bool, error) {
	keep := make([]bool, len(tables))
	for i := range keep {
		keep[i] = true
	}
	if where == nil {
		return keep, nil
	}
	sch := &schema.Schema{Fields: []*schema.Field{{Name: suffixColumn, Type: schema.String, Mode: schema.Nullable}}}
	for _, ct := range conjuncts(where.toks) {
		if len(ct) == 0 {
			continue
		}
		c := Span{toks: ct}
		if !onlySuffix(c) {
			continue
		}
		x, err := filter.CompileScalar(r.src[c.pos():c.end()], sch, filter.At(r.src[:c.pos()]), filter.WithParams(r.opts.Params))
		if err != nil || x.Type() != "BOOL" {
			continue // the WHERE clause's own compilation reports it
		}
		for i, wt := range tables {
			if !keep[i] {
				continue
			}
			suffix := strings.TrimPrefix(wt.Name.Table, prefix)
			rec, err := buildRecord(sch, 1, func(_, _ int) any { return suffix })
			if err != nil {
				return nil, err
			}
			v, err := x.Values(r.ctx, rec, 1)
			rec.Release()
			if err != nil {
				continue // an error is the query's to report, when it runs
			}
			keep[i] = v[0] == true
		}
	}
	return keep, nil
}

// onlySuffix reports whether a conjunct names no column but
// _TABLE_SUFFIX (function names and keywords aside) and has no
// subquery or parameter.
func onlySuffix(sp Span) bool {
	named := false
	for i, t := range sp.toks {
		if t.Param {
			return false
		}
		if !(t.Ident || t.QIdent) || t.Ident && filter.IsReserved(t.Text) {
			continue
		}
		if isCall(sp.toks, i) || i > 0 && sp.toks[i-1].Op && sp.toks[i-1].Text == "." {
			continue
		}
		if !strings.EqualFold(t.Value, suffixColumn) {
			return false
		}
		named = true
	}
	return named
}

// markPrunable records the wildcard tables of a FROM clause that its
// WHERE may prune: those reached through inner and cross joins only (on
// an outer join's NULL-filled side, a table not read would turn matched
// rows into NULL-filled ones, which a WHERE such as _TABLE_SUFFIX IS NULL
// keeps).
func (r *runner) markPrunable(f FromItem, where *Span) {
	switch f := f.(type) {
	case *TableRef:
		if strings.HasSuffix(f.Name.Table, "*") {
			if r.prunable == nil {
				r.prunable = map[*TableRef]*Span{}
			}
			r.prunable[f] = where
		}
	case *JoinRef:
		if f.Kind == "INNER" || f.Kind == "CROSS" {
			r.markPrunable(f.Left, where)
			r.markPrunable(f.Right, where)
		}
	}
}
