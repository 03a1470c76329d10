package sql

import (
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
)

// This file parses column lists and column types of CREATE TABLE and
// ALTER TABLE ADD COLUMN.

// columnList parses (col type ..., [PRIMARY KEY (...) NOT ENFORCED]).
func (p *parser) columnList(ct *CreateTable) error {
	p.i++ // (
	for {
		if p.isKw("PRIMARY", "KEY") {
			pos := p.tok().Pos
			p.i += 2
			cols, err := p.primaryKey(pos)
			if err != nil {
				return err
			}
			if ct.PrimaryKey != nil {
				return p.errf(pos, "Multiple primary keys are not allowed")
			}
			ct.PrimaryKey = cols
		} else if p.isKw("CONSTRAINT") || p.isKw("FOREIGN") {
			return notSupported(p.src, p.tok().Pos, "foreign keys and named constraints")
		} else {
			f, err := p.columnDef(true)
			if err != nil {
				return err
			}
			ct.Schema.Fields = append(ct.Schema.Fields, f)
		}
		if p.isOp(",") {
			p.i++
			if p.isOp(")") {
				break // a trailing comma is allowed
			}
			continue
		}
		break
	}
	return p.expectOp(")")
}

// primaryKey parses (cols) NOT ENFORCED after PRIMARY KEY.
func (p *parser) primaryKey(pos int) ([]string, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var cols []string
	for {
		n, _, err := p.name()
		if err != nil {
			return nil, err
		}
		cols = append(cols, n)
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if !p.isKw("NOT", "ENFORCED") {
		return nil, p.errf(pos, "ENFORCED primary key is not supported. Use NOT ENFORCED instead")
	}
	p.i += 2
	return cols, nil
}

// columnDef parses name type [NOT NULL] [DEFAULT expr] [OPTIONS(...)].
func (p *parser) columnDef(top bool) (*schema.Field, error) {
	n, _, err := p.name()
	if err != nil {
		return nil, err
	}
	f, err := p.fieldType()
	if err != nil {
		return nil, err
	}
	f.Name = n
	for {
		switch {
		case p.isKw("NOT", "NULL"):
			if f.Mode == schema.Repeated {
				return nil, p.errf(p.tok().Pos, "NOT NULL cannot be applied to ARRAY field %s", n)
			}
			f.Mode = schema.Required
			p.i += 2
		case p.isKw("DEFAULT") && top:
			p.i++
			start := p.i
			if err := p.defaultExpr(); err != nil {
				return nil, err
			}
			from, to := p.toks[start].Pos, p.toks[p.i-1].End
			f.DefaultValueExpression = p.src[from:to]
			if _, err := protorows.CompileDefault(f); err != nil {
				return nil, p.errf(from, "Invalid default value for column %s: %s", n, strings.TrimPrefix(err.Error(), "default value expression "))
			}
		case p.isKw("OPTIONS"):
			opts, err := p.options(columnOptions)
			if err != nil {
				return nil, err
			}
			for _, o := range opts {
				if o.Value != nil {
					f.Description = o.Value.(string)
				}
			}
		case p.isKw("PRIMARY") || p.isKw("REFERENCES") || p.isKw("COLLATE"):
			return nil, notSupported(p.src, p.tok().Pos, strings.ToUpper(p.tok().Text)+" in a column definition")
		default:
			return f, nil
		}
	}
}

// defaultExpr skips the tokens of a DEFAULT expression: up to a comma or
// ")" at depth 0, or NOT NULL / OPTIONS.
func (p *parser) defaultExpr() error {
	_, err := p.exprUntil(func(t filter.Token, start int) bool {
		return p.isKw("OPTIONS") || p.isKw("NOT", "NULL") && (p.i == start || !strings.EqualFold(p.toks[p.i-1].Text, "IS"))
	})
	return err
}

// typeNames maps GoogleSQL type names (and aliases) to the schema's.
var typeNames = map[string]schema.Type{
	"INT64": schema.Integer, "INT": schema.Integer, "INTEGER": schema.Integer, "SMALLINT": schema.Integer,
	"BIGINT": schema.Integer, "TINYINT": schema.Integer, "BYTEINT": schema.Integer,
	"FLOAT64": schema.Float, "FLOAT": schema.Float, "BOOL": schema.Boolean, "BOOLEAN": schema.Boolean,
	"STRING": schema.String, "BYTES": schema.Bytes, "NUMERIC": schema.Numeric, "DECIMAL": schema.Numeric,
	"BIGNUMERIC": schema.BigNumeric, "BIGDECIMAL": schema.BigNumeric, "DATE": schema.Date,
	"DATETIME": schema.DateTime, "TIME": schema.Time, "TIMESTAMP": schema.Timestamp,
	"GEOGRAPHY": schema.Geography, "JSON": schema.JSON, "INTERVAL": schema.Interval,
}

// fieldType parses a column type: a simple type with its parameters,
// STRUCT<...>, ARRAY<...> or RANGE<...>. The field's Mode is REPEATED
// for ARRAY, else NULLABLE.
func (p *parser) fieldType() (*schema.Field, error) {
	t := p.tok()
	if !t.Ident {
		return nil, p.unexpected()
	}
	up := strings.ToUpper(t.Text)
	p.i++
	f := &schema.Field{Mode: schema.Nullable}
	switch up {
	case "ARRAY":
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		if p.isKw("ARRAY") {
			return nil, p.errf(p.tok().Pos, "Arrays of arrays are not supported")
		}
		el, err := p.fieldType()
		if err != nil {
			return nil, err
		}
		if err := p.closeAngle(); err != nil {
			return nil, err
		}
		el.Mode = schema.Repeated
		return el, nil
	case "STRUCT":
		f.Type = schema.Record
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		for {
			c, err := p.columnDef(false)
			if err != nil {
				return nil, err
			}
			f.Fields = append(f.Fields, c)
			if !p.isOp(",") {
				break
			}
			p.i++
		}
		return f, p.closeAngle()
	case "RANGE":
		f.Type = schema.Range
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		el := p.tok()
		et, ok := typeNames[strings.ToUpper(el.Text)]
		if !el.Ident || !ok || (et != schema.Date && et != schema.DateTime && et != schema.Timestamp) {
			return nil, p.errf(el.Pos, "RANGE is only supported for DATE, DATETIME and TIMESTAMP")
		}
		p.i++
		f.RangeElementType = &schema.RangeElementType{Type: et}
		return f, p.closeAngle()
	}
	typ, ok := typeNames[up]
	if !ok {
		return nil, p.errf(t.Pos, "Type not found: %s", t.Text)
	}
	f.Type = typ
	if p.isOp("(") {
		pos := p.tok().Pos
		p.i++
		var args []int64
		for {
			a := p.tok()
			v, err := strconv.ParseInt(a.Text, 10, 64)
			if a.Ident || a.QIdent || a.Op || a.EOF || err != nil {
				return nil, p.unexpected()
			}
			args = append(args, v)
			p.i++
			if !p.isOp(",") {
				break
			}
			p.i++
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		switch {
		case (typ == schema.String || typ == schema.Bytes) && len(args) == 1 && args[0] > 0:
			f.MaxLength = schema.Int64(args[0])
		case (typ == schema.Numeric || typ == schema.BigNumeric) && len(args) <= 2:
			f.Precision = schema.Int64(args[0])
			if len(args) == 2 {
				f.Scale = schema.Int64(args[1])
			}
		default:
			return nil, p.errf(pos, "Parameterized types are not supported for %s with these parameters", up)
		}
	}
	return f, nil
}

// closeAngle consumes one ">" (splitting a ">>" token).
func (p *parser) closeAngle() error {
	t := p.tok()
	if t.Op && t.Text == ">>" {
		p.toks[p.i] = filter.Token{Pos: t.Pos + 1, End: t.End, Text: ">", Op: true}
		return nil
	}
	return p.expectOp(">")
}
