package sql

import (
	"context"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// This file holds what INSERT needs of the language: the coercion of a
// value to a column's type, and the Arrow record of rows of values.

// TypeName is the GoogleSQL name of a column type, as Scalar.Type names
// an expression's ("INT64", "FLOAT64", "BOOL", "STRING", ...).
func TypeName(t schema.Type) string {
	switch t {
	case schema.Integer:
		return "INT64"
	case schema.Float:
		return "FLOAT64"
	case schema.Boolean:
		return "BOOL"
	case schema.Record:
		return "STRUCT"
	}
	return string(t)
}

// CoerceError is a value whose type does not coerce to its column's.
type CoerceError struct{ From, To string }

func (e *CoerceError) Error() string { return e.From + " -> " + e.To }

// Coerce converts v, a value of GoogleSQL type from (as Scalar.Values
// returns it), to column f's type, as an INSERT assigns it: the same
// type, INT64 to NUMERIC, BIGNUMERIC or FLOAT64, NUMERIC to BIGNUMERIC or
// FLOAT64, NULL to anything, and a string literal (its text as written
// in literal) to DATE, DATETIME, TIME, TIMESTAMP, NUMERIC, BIGNUMERIC or
// JSON, as a typed literal, and a floating-point literal to NUMERIC or
// BIGNUMERIC. Anything else is a *CoerceError; a literal
// that does not read as the type is the expression layer's *filter.Error.
func Coerce(v any, from, literal string, f *schema.Field) (any, error) {
	to := TypeName(f.Type)
	switch {
	case v == nil:
		return nil, nil
	case f.Type == schema.Record || f.EffectiveMode() == schema.Repeated:
		// An ARRAY or STRUCT value of exactly the column's type.
		if full := filter.FieldTypeName(f); from != full {
			return nil, &CoerceError{From: from, To: full}
		}
		return v, nil
	case f.Type == schema.Range:
		// A RANGE value of exactly the column's type.
		if full := filter.FieldTypeName(f); from != full {
			return nil, &CoerceError{From: from, To: full}
		}
		return v, nil
	case from == to:
		return v, nil
	case from == "INT64" && to == "FLOAT64":
		return float64(v.(int64)), nil
	case from == "INT64" && (to == "NUMERIC" || to == "BIGNUMERIC"):
		return new(big.Rat).SetInt64(v.(int64)), nil
	case from == "NUMERIC" && to == "BIGNUMERIC":
		return v, nil
	case from == "NUMERIC" && to == "FLOAT64":
		f, _ := v.(*big.Rat).Float64()
		return f, nil
	case from == "FLOAT64" && literal != "" && (to == "NUMERIC" || to == "BIGNUMERIC"):
		// A floating-point literal coerces to NUMERIC exactly.
		return typedLiteral(to, "'"+literal+"'")
	case from == "STRING" && literal != "":
		switch to {
		case "DATE", "DATETIME", "TIME", "TIMESTAMP", "NUMERIC", "BIGNUMERIC", "JSON":
			return typedLiteral(to, literal)
		}
	}
	return nil, &CoerceError{From: from, To: to}
}

// typedLiteral evaluates the typed literal "typ literal".
func typedLiteral(typ, literal string) (any, error) {
	x, err := filter.CompileScalar(typ+" "+literal, &schema.Schema{})
	if err != nil {
		return nil, err
	}
	vals, err := x.Values(context.Background(), nil, 1)
	if err != nil {
		return nil, err
	}
	return vals[0], nil
}

// BuildRecordRows builds an Arrow record, in s's Arrow mapping, of rows
// of values as Result.Rows holds them.
func BuildRecordRows(s *schema.Schema, rows [][]any) (arrow.RecordBatch, error) {
	return buildResult(s, len(rows), func(col, row int) any { return rows[row][col] })
}

// BuildRelationRows is BuildRecordRows for rows a query goes on reading
// (a view's rows): a NULL ARRAY stays NULL rather than being written [].
func BuildRelationRows(s *schema.Schema, rows [][]any) (arrow.RecordBatch, error) {
	return buildRecord(s, len(rows), func(col, row int) any { return rows[row][col] })
}
