package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/bqstore/bqstore/internal/schema"
)

// maxSchemaFileBytes caps a schema file; a 10,000-column schema is well
// under it.
const maxSchemaFileBytes = 16 << 20

// readSchemaArg reads the SCHEMA argument of mk and update as bq does: the
// path of a JSON schema file if such a file exists, else inline JSON (an
// argument starting with '[' or '{'), else the inline form
// "name:TYPE,name:TYPE" (a name alone is a STRING column).
func readSchemaArg(arg string) (*schema.Schema, error) {
	st, err := os.Stat(arg)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("schema file %s is a directory", arg)
	case err == nil:
		if st.Size() > maxSchemaFileBytes {
			return nil, fmt.Errorf("schema file %s is larger than %d bytes", arg, maxSchemaFileBytes)
		}
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, err
		}
		s, err := parseSchemaJSON(b)
		if err != nil {
			return nil, fmt.Errorf("schema file %s: %w", arg, err)
		}
		return s, nil
	case strings.HasSuffix(strings.ToLower(arg), ".json"):
		return nil, fmt.Errorf("schema file %s: %w", arg, err)
	}
	return parseSchemaArg(arg)
}

// parseSchemaArg parses an inline schema: JSON, or "name:TYPE,...".
func parseSchemaArg(s string) (*schema.Schema, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		return parseSchemaJSON([]byte(t))
	}
	return parseInlineSchema(t)
}

// parseSchemaJSON parses bq's schema file format: a JSON array of fields,
// or an object {"fields":[...]}. Member names must be known.
func parseSchemaJSON(b []byte) (*schema.Schema, error) {
	b = bytes.TrimSpace(b)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s schema.Schema
	if len(b) > 0 && b[0] == '[' {
		if err := dec.Decode(&s.Fields); err != nil {
			return nil, fmt.Errorf("invalid JSON schema: %v", err)
		}
	} else if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("invalid JSON schema: %v", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON schema: unexpected data after the schema")
	}
	for i, f := range s.Fields {
		if f == nil {
			return nil, fmt.Errorf("invalid JSON schema: field %d is null", i+1)
		}
	}
	return &s, nil
}

// parseInlineSchema parses "name:TYPE,name:TYPE" (bq's inline schema;
// TYPE may be NUMERIC(10,2), STRING(8), ...). A name without a type is a
// STRING column. Types are checked here so that
// the error names the position.
func parseInlineSchema(s string) (*schema.Schema, error) {
	if s == "" {
		return nil, errors.New("empty schema")
	}
	out := &schema.Schema{}
	for i, part := range splitInlineSchema(s) {
		name, typ, hasType := strings.Cut(strings.TrimSpace(part), ":")
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("inline schema: column %d has no name (want name:TYPE)", i+1)
		}
		f := &schema.Field{Name: name, Type: schema.String, Mode: schema.Nullable}
		if hasType {
			if err := inlineType(f, typ); err != nil {
				return nil, fmt.Errorf("inline schema: column %d (%s): %w", i+1, name, err)
			}
		}
		out.Fields = append(out.Fields, f)
	}
	return out, nil
}
