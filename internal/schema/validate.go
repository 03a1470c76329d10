package schema

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits BigQuery documents for table schemas ("Specify a schema" and
// "Quotas and limits"). They apply to the REST v2 surface and to the
// catalog.
const (
	// MaxColumnNameLen is the longest column name, in characters.
	MaxColumnNameLen = 300
	// MaxDescriptionLen is the longest column description, in characters.
	MaxDescriptionLen = 1024
	// MaxNestingDepth is how deep RECORD columns may nest: a top-level
	// column is at depth 1.
	MaxNestingDepth = 15
	// MaxColumns is the most columns a table may have, counting the
	// fields of RECORD columns too.
	MaxColumns = 10000
)

// reservedPrefixes are the column-name prefixes BigQuery rejects
// (case-insensitively).
var reservedPrefixes = []string{
	"_TABLE_", "_FILE_", "_PARTITION", "_ROW_TIMESTAMP", "__ROOT__",
	"_COLIDENTIFIER", "_CHANGE_SEQUENCE_NUMBER", "_CHANGE_TYPE", "_CHANGE_TIMESTAMP",
}

// ErrInvalid marks every schema error: an invalid schema, or a change of
// schema that BigQuery does not allow. Test with errors.Is.
var ErrInvalid = errors.New("schema: invalid")

// InvalidError is a schema (or schema change) that BigQuery would reject.
// Path names the column as a dotted path ("a.b"); it is empty for errors
// about the schema as a whole. The message is meant for the API's 400
// "invalid" response.
type InvalidError struct {
	Path string
	Msg  string
}

func (e *InvalidError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(path, format string, args ...any) *InvalidError {
	return &InvalidError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Normalize returns a validated deep copy of s with canonical type names
// (INTEGER, FLOAT, BOOLEAN, RECORD, ...) and explicit modes (NULLABLE when
// unset), or an *InvalidError naming the first offending column. A nil
// schema normalizes to an empty one (a table without columns, which
// BigQuery allows).
func Normalize(s *Schema) (*Schema, error) {
	if s == nil {
		return &Schema{Fields: []*Field{}}, nil
	}
	out := s.Clone()
	if out.Fields == nil {
		out.Fields = []*Field{}
	}
	if err := normalizeFields(out.Fields, ""); err != nil {
		return nil, err
	}
	if err := Validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

func normalizeFields(fs []*Field, parent string) error {
	for i, f := range fs {
		if f == nil {
			return invalidf(parent, "Field %s is null", fieldPos(parent, i))
		}
		path := joinPath(parent, f.Name)
		if f.Type == "" {
			return invalidf(path, "Field %s: type is missing", pathOrPos(path, parent, i))
		}
		t, ok := CanonicalType(string(f.Type))
		if !ok {
			return invalidf(path, "Field %s: invalid type %q", pathOrPos(path, parent, i), string(f.Type))
		}
		f.Type = t
		switch m := Mode(strings.ToUpper(strings.TrimSpace(string(f.Mode)))); m {
		case "":
			f.Mode = Nullable
		case Nullable, Required, Repeated:
			f.Mode = m
		default:
			return invalidf(path, "Field %s: invalid mode %q", pathOrPos(path, parent, i), string(f.Mode))
		}
		if f.RangeElementType != nil {
			if et, ok := CanonicalType(string(f.RangeElementType.Type)); ok {
				f.RangeElementType.Type = et
			}
		}
		if err := normalizeFields(f.Fields, path); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a normalized schema against BigQuery's rules: column
// names, case-insensitive duplicates, RECORD fields, nesting depth,
// precision and scale, maxLength, RANGE element types, description length
// and the column count. Use Normalize on input from users; Validate
// expects canonical types and explicit modes.
func Validate(s *Schema) error {
	if s == nil {
		return nil
	}
	n := 0
	if err := validateFields(s.Fields, "", 1, &n); err != nil {
		return err
	}
	if n > MaxColumns {
		return invalidf("", "Too many columns: the schema has %d columns, the limit is %d", n, MaxColumns)
	}
	return nil
}

func validateFields(fs []*Field, parent string, depth int, n *int) error {
	seen := make(map[string]string, len(fs))
	for i, f := range fs {
		if f == nil {
			return invalidf(parent, "Field %s is null", fieldPos(parent, i))
		}
		*n++
		if err := validateName(f.Name, parent, i); err != nil {
			return err
		}
		path := joinPath(parent, f.Name)
		key := strings.ToLower(f.Name)
		if prev, dup := seen[key]; dup {
			return invalidf(path, "Field %s already exists in schema (duplicate of %s; column names are case-insensitive)", path, joinPath(parent, prev))
		}
		seen[key] = f.Name
		if err := validateField(f, path, depth); err != nil {
			return err
		}
		if f.Type == Record {
			if depth >= MaxNestingDepth {
				return invalidf(path, "Field %s: RECORD columns may nest at most %d levels", path, MaxNestingDepth)
			}
			if err := validateFields(f.Fields, path, depth+1, n); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateName(name, parent string, i int) error {
	pos := fieldPos(parent, i)
	if name == "" {
		return invalidf(parent, "Field %s: name is missing", pos)
	}
	if !utf8.ValidString(name) {
		return invalidf(parent, "Field %s: name is not valid UTF-8", pos)
	}
	if utf8.RuneCountInString(name) > MaxColumnNameLen {
		return invalidf(joinPath(parent, name), "Field %s: name is longer than %d characters", pos, MaxColumnNameLen)
	}
	for j, r := range name {
		ok := r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || (j > 0 && '0' <= r && r <= '9')
		if !ok {
			return invalidf(joinPath(parent, name), "Invalid field name %q. Fields must contain only letters, numbers, and underscores, start with a letter or underscore, and be at most %d characters long", name, MaxColumnNameLen)
		}
	}
	upper := strings.ToUpper(name)
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(upper, p) {
			return invalidf(joinPath(parent, name), "Invalid field name %q. Field names cannot start with the reserved prefix %s", name, p)
		}
	}
	return nil
}

func validateField(f *Field, path string, depth int) error {
	if _, ok := CanonicalType(string(f.Type)); !ok || Type(strings.ToUpper(string(f.Type))) != f.Type {
		return invalidf(path, "Field %s: invalid type %q", path, string(f.Type))
	}
	switch f.Mode {
	case Nullable, Required, Repeated:
	default:
		return invalidf(path, "Field %s: invalid mode %q", path, string(f.Mode))
	}
	if n := utf8.RuneCountInString(f.Description); n > MaxDescriptionLen {
		return invalidf(path, "Field %s: description is longer than %d characters", path, MaxDescriptionLen)
	}
	if f.Type == Record {
		if len(f.Fields) == 0 {
			return invalidf(path, "Field %s is type RECORD but has no schema", path)
		}
	} else if len(f.Fields) > 0 {
		return invalidf(path, "Field %s is type %s but has a schema (only RECORD columns have fields)", path, f.Type)
	}
	if f.MaxLength != 0 {
		if f.Type != String && f.Type != Bytes {
			return invalidf(path, "Field %s: maxLength is only allowed for STRING and BYTES columns, not %s", path, f.Type)
		}
		if f.MaxLength < 0 {
			return invalidf(path, "Field %s: maxLength must be positive, got %d", path, f.MaxLength)
		}
	}
	if err := validatePrecision(f, path); err != nil {
		return err
	}
	if f.Type == Range {
		if f.RangeElementType == nil || f.RangeElementType.Type == "" {
			return invalidf(path, "Field %s: RANGE columns need a rangeElementType (DATE, DATETIME or TIMESTAMP)", path)
		}
		switch f.RangeElementType.Type {
		case Date, DateTime, Timestamp:
		default:
			return invalidf(path, "Field %s: invalid rangeElementType %q (DATE, DATETIME or TIMESTAMP)", path, string(f.RangeElementType.Type))
		}
		if f.Mode == Repeated {
			return invalidf(path, "Field %s: RANGE columns cannot be REPEATED", path)
		}
	} else if f.RangeElementType != nil {
		return invalidf(path, "Field %s: rangeElementType is only allowed for RANGE columns, not %s", path, f.Type)
	}
	return nil
}

// validatePrecision applies the parameterized-type rules: NUMERIC(P[,S])
// with 1 <= P-S <= 29 and 0 <= S <= 9; BIGNUMERIC(P[,S]) with
// 1 <= P-S <= 38 and 0 <= S <= 38. A scale needs a precision. Zero means
// unset (a precision of 0 is invalid anyway).
func validatePrecision(f *Field, path string) error {
	if f.Precision == 0 && f.Scale == 0 {
		return nil
	}
	var maxInt, maxScale int64
	switch f.Type {
	case Numeric:
		maxInt, maxScale = 29, 9
	case BigNumeric:
		maxInt, maxScale = 38, 38
	default:
		return invalidf(path, "Field %s: precision and scale are only allowed for NUMERIC and BIGNUMERIC columns, not %s", path, f.Type)
	}
	p, s := int64(f.Precision), int64(f.Scale)
	if p == 0 {
		return invalidf(path, "Field %s: scale is set without precision", path)
	}
	if s < 0 || s > maxScale {
		return invalidf(path, "Field %s: invalid scale %d for %s (0 to %d)", path, s, f.Type, maxScale)
	}
	if d := p - s; d < 1 || d > maxInt {
		return invalidf(path, "Field %s: invalid precision %d and scale %d for %s (need 1 <= precision - scale <= %d)", path, p, s, f.Type, maxInt)
	}
	return nil
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// fieldPos names a field by position, for fields without a usable name.
func fieldPos(parent string, i int) string {
	if parent == "" {
		return fmt.Sprintf("fields[%d]", i)
	}
	return fmt.Sprintf("%s.fields[%d]", parent, i)
}

func pathOrPos(path, parent string, i int) string {
	if path == parent || strings.HasSuffix(path, ".") {
		return fieldPos(parent, i)
	}
	return path
}
