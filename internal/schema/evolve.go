package schema

import (
	"strconv"
	"strings"
)

// CheckEvolution reports whether a table whose schema is old may take the
// schema new, under the rules BigQuery applies to tables.patch and
// tables.update ("Modifying table schemas"):
//
//   - adding a NULLABLE or REPEATED column, at the top level or inside a
//     RECORD, is allowed;
//   - relaxing a REQUIRED column to NULLABLE is allowed;
//   - changing a description or a default value expression is allowed;
//   - raising or removing a STRING/BYTES maxLength is allowed;
//   - dropping or renaming a column, changing its type, its precision or
//     scale, its RANGE element type, tightening its mode or any change to
//     or from REPEATED, and adding a REQUIRED column are errors.
//
// Existing columns keep their positions; new columns are appended after
// the existing ones of their RECORD (or table). Column names match
// case-insensitively, as BigQuery matches them, but a change of case is a
// rename. A table without columns may take any schema. Both schemas must be normalized. The error is an *InvalidError
// whose Path names the column ("a.b").
func CheckEvolution(old, new *Schema) error {
	var of, nf []*Field
	if old != nil {
		of = old.Fields
	}
	if new != nil {
		nf = new.Fields
	}
	if len(of) == 0 {
		// A table created without a schema gets its first one: that is
		// not a change of an existing schema, so REQUIRED columns are fine.
		return nil
	}
	return evolveFields(of, nf, "")
}

func evolveFields(old, new []*Field, parent string) error {
	for i, o := range old {
		path := joinPath(parent, o.Name)
		j := evolveIndex(new, o.Name)
		if j < 0 {
			return invalidf(path, "Field %s is missing in new schema", path)
		}
		n := new[j]
		if n.Name != o.Name {
			return invalidf(path, "Field %s cannot be renamed to %s", path, joinPath(parent, n.Name))
		}
		if j != i {
			return invalidf(path, "Field %s has changed position from %d to %d (new columns must follow the existing ones)", path, i, j)
		}
		if n.Type != o.Type {
			return invalidf(path, "Field %s has changed type from %s to %s", path, o.Type, n.Type)
		}
		if n.Mode != o.Mode && !(o.Mode == Required && n.Mode == Nullable) {
			return invalidf(path, "Field %s has changed mode from %s to %s", path, o.Mode, n.Mode)
		}
		narrowed := (o.MaxLength == 0 && n.MaxLength != 0) || (o.MaxLength != 0 && n.MaxLength != 0 && n.MaxLength < o.MaxLength)
		if narrowed {
			return invalidf(path, "Field %s: maxLength cannot be narrowed from %s to %s", path, lengthText(o.MaxLength), lengthText(n.MaxLength))
		}
		if n.Precision != o.Precision || n.Scale != o.Scale {
			return invalidf(path, "Field %s has changed precision/scale from (%d,%d) to (%d,%d)", path, o.Precision, o.Scale, n.Precision, n.Scale)
		}
		if rangeType(o) != rangeType(n) {
			return invalidf(path, "Field %s has changed rangeElementType from %s to %s", path, rangeType(o), rangeType(n))
		}
		if o.Type == Record {
			if err := evolveFields(o.Fields, n.Fields, path); err != nil {
				return err
			}
		}
	}
	for _, n := range new[min(len(old), len(new)):] {
		if evolveIndex(old, n.Name) >= 0 {
			continue // reported above as a position change
		}
		if n.Mode == Required {
			path := joinPath(parent, n.Name)
			return invalidf(path, "Cannot add required fields to an existing schema. (field: %s)", path)
		}
	}
	return nil
}

func evolveIndex(fs []*Field, name string) int {
	for i, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func rangeType(f *Field) Type {
	if f.RangeElementType == nil {
		return ""
	}
	return f.RangeElementType.Type
}

func lengthText(n Int64) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.FormatInt(int64(n), 10)
}
