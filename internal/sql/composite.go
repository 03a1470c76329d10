package sql

import (
	"fmt"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// ARRAY and STRUCT values in the query engine. Types travel as GoogleSQL
// type names (ARRAY<INT64>, STRUCT<a INT64, b STRING>) as
// filter.Scalar.Type spells them; an ARRAY value is a []any of its
// elements and a STRUCT value a filter.Struct of its fields. A result
// column of type ARRAY<T> is a REPEATED field, a STRUCT a RECORD.
//
// BigQuery's rules: ARRAYs are neither orderable nor groupable (GROUP
// BY, DISTINCT, PARTITION BY, set operations' DISTINCT), STRUCTs are
// groupable but not orderable, and a result may not hold an ARRAY with a
// NULL element.

// typeKind is "ARRAY" or "STRUCT" for composite type names, t otherwise.
func typeKind(t string) string {
	switch {
	case strings.HasPrefix(t, "ARRAY<"):
		return "ARRAY"
	case strings.HasPrefix(t, "STRUCT<"), t == "STRUCT":
		return "STRUCT"
	case strings.HasPrefix(t, "RANGE<"):
		return "RANGE"
	}
	return t
}

// resultField is the schema field of a result column of type t.
func resultField(name, t string) *schema.Field {
	if k := typeKind(t); k == "ARRAY" || k == "STRUCT" || k == "RANGE" {
		if f, err := filter.TypeField(name, t); err == nil {
			return f
		}
	}
	return &schema.Field{Name: name, Type: bqType(t), Mode: schema.Nullable}
}

// checkNullElements fails a result holding an ARRAY with a NULL element,
// as BigQuery fails writing it.
func checkNullElements(s *schema.Schema, rows [][]any) error {
	for c, f := range s.Fields {
		if f.Mode != schema.Repeated && f.Type != schema.Record {
			continue
		}
		for _, row := range rows {
			if hasNullElement(row[c]) {
				return &filter.Error{Line: 1, Column: 1, Msg: "Array cannot have a null element; error in writing field " + f.Name}
			}
		}
	}
	return nil
}

func hasNullElement(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if e == nil || hasNullElement(e) {
				return true
			}
		}
	case filter.Struct:
		for _, e := range x {
			if hasNullElement(e) {
				return true
			}
		}
	}
	return false
}

// appendCompositeKey appends the grouping key of a STRUCT (or, where
// the analyzer let one through, an ARRAY).
func appendCompositeKey(dst []byte, v any) []byte {
	var elems []any
	tag := byte(6)
	switch x := v.(type) {
	case filter.Struct:
		elems = x
	case []any:
		elems, tag = x, 7
	default:
		panic(fmt.Sprintf("sql: value of type %T", v))
	}
	dst = append(dst, tag, byte(len(elems)>>24), byte(len(elems)>>16), byte(len(elems)>>8), byte(len(elems)))
	for _, e := range elems {
		dst = appendKey(dst, e)
	}
	return dst
}

// asStructOrValue applies SELECT AS STRUCT and AS VALUE to a block's
// rows. In an expression's subquery AS STRUCT makes each row one STRUCT
// of the select list; elsewhere (the query's result, a FROM subquery) a
// value table of STRUCTs reads as its fields, so the columns stay.
func (r *runner) asStructOrValue(sel *Select, rs *rowset) (*rowset, error) {
	switch {
	case sel.AsValue:
		if len(rs.types) != 1 {
			return nil, r.errf(sel.AsPos, "SELECT AS VALUE query must have exactly one column")
		}
	case sel.AsStruct && r.exprSub > 0:
		var b strings.Builder
		b.WriteString("STRUCT<")
		for i, t := range rs.types {
			if i > 0 {
				b.WriteString(", ")
			}
			if n := rs.names[i]; n != "" {
				b.WriteString(quoteIdent(n) + " ")
			}
			if t == "NULL" {
				t = "INT64"
			}
			b.WriteString(t)
		}
		b.WriteString(">")
		out := &rowset{names: []string{""}, types: []string{b.String()}, rows: make([][]any, len(rs.rows))}
		for i, row := range rs.rows {
			out.rows[i] = []any{filter.Struct(row)}
		}
		return out, nil
	}
	return rs, nil
}

// arraySubquery is the value of ARRAY(subquery): its rows' one column (a
// STRUCT each with SELECT AS STRUCT), in order; no rows is an empty array.
func (r *runner) arraySubquery(rs *rowset, pos int) (filter.Const, error) {
	if len(rs.types) != 1 {
		return filter.Const{}, r.errf(pos, "ARRAY subquery cannot have more than one column unless using SELECT AS STRUCT to build STRUCT values")
	}
	et := rs.types[0]
	if et == "NULL" {
		et = "INT64"
	}
	if typeKind(et) == "ARRAY" {
		return filter.Const{}, r.errf(pos, "Cannot use array subquery with column of type %s because nested arrays are not supported", et)
	}
	elems := make([]any, len(rs.rows))
	for i, row := range rs.rows {
		elems[i] = row[0]
	}
	return filter.Const{Type: "ARRAY<" + et + ">", Values: []any{elems}}, nil
}
