package sql

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
)

// This file parses the DDL statements: CREATE TABLE|VIEW|SCHEMA,
// DROP TABLE|VIEW|SCHEMA and ALTER TABLE.

// expectKw consumes the keyword kw or fails with BigQuery's "Expected"
// syntax error.
func (p *parser) expectKw(kw string) error {
	if !p.isKw(kw) {
		return p.errf(p.tok().Pos, "Syntax error: Expected keyword %s but got %s", kw, describe(p.tok()))
	}
	p.i++
	return nil
}

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.errf(p.tok().Pos, "Syntax error: Expected \"%s\" but got %s", op, describe(p.tok()))
	}
	p.i++
	return nil
}

// name consumes one identifier (a column or option name).
func (p *parser) name() (string, int, error) {
	t := p.tok()
	if t.QIdent || t.Ident && !filter.IsReserved(t.Text) {
		p.i++
		return t.Value, t.Pos, nil
	}
	return "", t.Pos, p.unexpected()
}

// end fails unless the statement ends here.
func (p *parser) end() error {
	if t := p.tok(); !t.EOF {
		return p.errf(t.Pos, "Syntax error: Expected end of input but got %s", describe(t))
	}
	return nil
}

func (p *parser) create(st *Statement) error {
	p.i++ // CREATE
	orReplace := false
	if p.isKw("OR", "REPLACE") {
		orReplace = true
		p.i += 2
	}
	t := p.tok()
	switch {
	case p.isKw("TEMP") || p.isKw("TEMPORARY"):
		return notSupported(p.src, t.Pos, "temporary tables")
	case p.isKw("EXTERNAL") || p.isKw("SNAPSHOT") || p.isKw("MATERIALIZED") || p.isKw("FUNCTION") ||
		p.isKw("PROCEDURE") || p.isKw("MODEL") || p.isKw("ROW") || p.isKw("SEARCH") || p.isKw("VECTOR") ||
		p.isKw("AGGREGATE") || p.isKw("TABLE", "FUNCTION"):
		return notSupported(p.src, t.Pos, "CREATE "+strings.ToUpper(t.Text))
	case p.isKw("TABLE"):
		p.i++
		ct := &CreateTable{OrReplace: orReplace}
		st.CreateTable = ct
		st.Type = "CREATE_TABLE"
		if p.isKw("IF", "NOT", "EXISTS") {
			ct.IfNotExists = true
			p.i += 3
		}
		if ct.OrReplace && ct.IfNotExists {
			return p.errf(t.Pos, "CREATE TABLE cannot have both OR REPLACE and IF NOT EXISTS")
		}
		n, err := p.objectName()
		if err != nil {
			return err
		}
		ct.Name = *n
		if p.isOp("(") {
			ct.Schema = &schema.Schema{}
			if err := p.columnList(ct); err != nil {
				return err
			}
		}
		for _, kw := range []string{"LIKE", "COPY", "CLONE", "DEFAULT", "WITH"} {
			if p.isKw(kw) {
				return notSupported(p.src, p.tok().Pos, "CREATE TABLE ... "+kw)
			}
		}
		if p.isKw("PARTITION", "BY") {
			p.i += 2
			if err := p.partitionBy(ct); err != nil {
				return err
			}
		}
		if p.isKw("CLUSTER", "BY") {
			ct.ClusterPos = p.tok().Pos
			p.i += 2
			for {
				n, _, err := p.name()
				if err != nil {
					return err
				}
				ct.ClusterBy = append(ct.ClusterBy, n)
				if !p.isOp(",") {
					break
				}
				p.i++
			}
			if len(ct.ClusterBy) > 4 {
				return p.errf(ct.ClusterPos, "Too many clustering columns: %d, the limit is 4", len(ct.ClusterBy))
			}
		}
		if p.isKw("OPTIONS") {
			if ct.Options, err = p.options(tableOptions); err != nil {
				return err
			}
		}
		if p.isKw("AS") {
			p.i++
			if ct.Schema != nil {
				return notSupported(p.src, p.tok().Pos, "CREATE TABLE with both a column list and AS SELECT")
			}
			if p.tok().EOF {
				return p.unexpected()
			}
			ct.Query = blank(p.src, p.tok().Pos, len(p.src))
			st.Type = "CREATE_TABLE_AS_SELECT"
			return nil
		}
		if ct.Schema == nil {
			return p.errf(p.tok().Pos, "Syntax error: Expected \"(\" or keyword AS but got %s", describe(p.tok()))
		}
		return p.end()
	case p.isKw("VIEW"):
		p.i++
		cv := &CreateView{OrReplace: orReplace}
		st.CreateView, st.Type = cv, "CREATE_VIEW"
		if p.isKw("IF", "NOT", "EXISTS") {
			cv.IfNotExists = true
			p.i += 3
		}
		n, err := p.objectName()
		if err != nil {
			return err
		}
		cv.Name = *n
		if p.isOp("(") {
			return notSupported(p.src, p.tok().Pos, "view column lists")
		}
		if p.isKw("OPTIONS") {
			if cv.Options, err = p.options(tableOptions); err != nil {
				return err
			}
		}
		if err := p.expectKw("AS"); err != nil {
			return err
		}
		if p.tok().EOF {
			return p.unexpected()
		}
		cv.Query = strings.TrimSpace(p.src[p.tok().Pos:])
		cv.QueryText = blank(p.src, p.tok().Pos, len(p.src))
		return nil
	case p.isKw("SCHEMA"):
		p.i++
		cs := &CreateSchema{Pos: t.Pos}
		st.CreateSchema, st.Type = cs, "CREATE_SCHEMA"
		if p.isKw("IF", "NOT", "EXISTS") {
			cs.IfNotExists = true
			p.i += 3
		}
		var err error
		if cs.Project, cs.Dataset, err = p.schemaName(); err != nil {
			return err
		}
		if orReplace {
			return notSupported(p.src, t.Pos, "CREATE OR REPLACE SCHEMA")
		}
		if p.isKw("DEFAULT") {
			return notSupported(p.src, p.tok().Pos, "DEFAULT COLLATE")
		}
		if p.isKw("OPTIONS") {
			if cs.Options, err = p.options(schemaOptions); err != nil {
				return err
			}
		}
		return p.end()
	}
	return p.errf(t.Pos, "Syntax error: Expected keyword TABLE, VIEW or SCHEMA but got %s", describe(t))
}

// objectName parses a table or view name: `p.d.t`, p.d.t, d.t, t.
func (p *parser) objectName() (*TableName, error) {
	t := p.tok()
	var parts []string
	for {
		t := p.tok()
		switch {
		case t.QIdent:
			parts = append(parts, strings.Split(t.Value, ".")...)
		case t.Ident && !filter.IsReserved(t.Text):
			parts = append(parts, t.Value)
		default:
			return nil, p.unexpected()
		}
		p.i++
		if !p.isOp(".") && !p.isOp("-") {
			break
		}
		if p.isOp("-") {
			// An unquoted project name with dashes: my-project.d.t.
			if len(parts) != 1 || p.i+1 >= len(p.toks) || p.toks[p.i+1].Pos != p.tok().End {
				return nil, p.unexpected()
			}
			p.i++
			nx := p.tok()
			if !nx.Ident {
				return nil, p.unexpected()
			}
			parts[0] += "-" + nx.Value
			p.i++
			if !p.isOp(".") {
				return nil, p.unexpected()
			}
		}
		p.i++
	}
	out := &TableName{Pos: t.Pos}
	switch len(parts) {
	case 1:
		out.Table = parts[0]
	case 2:
		out.Dataset, out.Table = parts[0], parts[1]
	case 3:
		out.Project, out.Dataset, out.Table = parts[0], parts[1], parts[2]
	default:
		return nil, p.errf(t.Pos, "Invalid table name: %s", strings.Join(parts, "."))
	}
	return out, nil
}

// schemaName parses [project.]dataset.
func (p *parser) schemaName() (string, string, error) {
	t := p.tok()
	var parts []string
	for {
		t := p.tok()
		switch {
		case t.QIdent:
			parts = append(parts, strings.Split(t.Value, ".")...)
		case t.Ident && !filter.IsReserved(t.Text):
			parts = append(parts, t.Value)
		default:
			return "", "", p.unexpected()
		}
		p.i++
		if !p.isOp(".") {
			break
		}
		p.i++
	}
	switch len(parts) {
	case 1:
		return "", parts[0], nil
	case 2:
		return parts[0], parts[1], nil
	}
	return "", "", p.errf(t.Pos, "Invalid dataset name: %s", strings.Join(parts, "."))
}

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

// The options each object takes, with the GoogleSQL type of their value.
var (
	tableOptions = map[string]string{
		"description": "STRING", "friendly_name": "STRING", "expiration_timestamp": "TIMESTAMP",
		"labels": "LABELS",
	}
	columnOptions = map[string]string{"description": "STRING"}
	schemaOptions = map[string]string{
		"description": "STRING", "friendly_name": "STRING", "location": "STRING",
		"default_table_expiration_days": "FLOAT64", "labels": "LABELS",
	}
)

// options parses OPTIONS(name = constant, ...), each value evaluated.
func (p *parser) options(allowed map[string]string) ([]Option, error) {
	p.i++ // OPTIONS
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var out []Option
	for !p.isOp(")") {
		n, pos, err := p.name()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		sp, err := p.expr()
		if err != nil {
			return nil, err
		}
		want, ok := allowed[strings.ToLower(n)]
		if !ok {
			return nil, notSupported(p.src, pos, "OPTIONS("+n+")")
		}
		o := Option{Name: strings.ToLower(n), Pos: pos}
		if want == "LABELS" {
			if o.Value, err = p.labels(sp); err != nil {
				return nil, err
			}
			o.Type = want
			out = append(out, o)
			if !p.isOp(",") {
				break
			}
			p.i++
			continue
		}
		o.Value, o.Type, err = p.constant(sp, want)
		if err != nil {
			return nil, err
		}
		if o.Type != "NULL" && o.Type != want && !(want == "FLOAT64" && o.Type == "INT64") {
			return nil, p.errf(sp.pos(), "Invalid value for option %s: expected %s but got %s", n, want, o.Type)
		}
		if f, ok := o.Value.(int64); ok && want == "FLOAT64" {
			o.Value = float64(f)
		}
		out = append(out, o)
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	return out, p.expectOp(")")
}

// constant evaluates a constant expression; a string literal where want
// is TIMESTAMP is read as a TIMESTAMP literal.
func (p *parser) constant(sp Span, want string) (any, string, error) {
	text := blank(p.src, sp.pos(), sp.end())
	if want == "TIMESTAMP" && len(sp.toks) == 1 && isStringLit(sp.toks[0]) {
		text = blank(p.src, sp.pos(), sp.pos()) + "TIMESTAMP " + p.src[sp.pos():sp.end()]
	}
	x, err := filter.CompileScalar(text, &schema.Schema{})
	if err != nil {
		return nil, "", err
	}
	if len(x.Columns()) > 0 {
		return nil, "", p.errf(sp.pos(), "Unrecognized name: %s", x.Columns()[0])
	}
	v, err := x.Values(context.Background(), nil, 1)
	if err != nil {
		return nil, "", err
	}
	return v[0], x.Type(), nil
}

// labels reads OPTIONS(labels=[("key", "value"), ...]) (also
// STRUCT("key", "value") elements) as a map; an empty array is no labels.
func (p *parser) labels(sp Span) (map[string]string, error) {
	toks := sp.toks
	bad := func() error {
		return p.errf(sp.pos(), "Invalid value for option labels: expected an ARRAY of (STRING, STRING) pairs such as [(\"key\", \"value\")]")
	}
	out := map[string]string{}
	if len(toks) < 2 || toks[0].Text != "[" || toks[len(toks)-1].Text != "]" {
		return nil, bad()
	}
	i := 1
	for i < len(toks)-1 {
		if toks[i].Ident && strings.EqualFold(toks[i].Text, "STRUCT") {
			i++
		}
		if i+5 >= len(toks) || toks[i].Text != "(" || !isStringLit(toks[i+1]) || toks[i+2].Text != "," || !isStringLit(toks[i+3]) || toks[i+4].Text != ")" {
			return nil, bad()
		}
		out[toks[i+1].Value] = toks[i+3].Value
		i += 5
		if toks[i].Text == "," {
			i++
		}
	}
	return out, nil
}

// isStringLit reports whether t is a string literal (not bytes).
func isStringLit(t filter.Token) bool {
	if t.Ident || t.QIdent || t.Op || t.EOF || t.Text == "" {
		return false
	}
	s := strings.TrimLeft(t.Text, "rR")
	return s != "" && (s[0] == '\'' || s[0] == '"')
}

func (p *parser) drop(st *Statement) error {
	p.i++ // DROP
	t := p.tok()
	d := &Drop{What: strings.ToUpper(t.Text)}
	switch {
	case p.isKw("TABLE"), p.isKw("VIEW"), p.isKw("SCHEMA"):
		p.i++
	case p.isKw("EXTERNAL") || p.isKw("SNAPSHOT") || p.isKw("MATERIALIZED") || p.isKw("FUNCTION") ||
		p.isKw("PROCEDURE") || p.isKw("MODEL") || p.isKw("ROW") || p.isKw("SEARCH") || p.isKw("VECTOR") ||
		p.isKw("ALL") || p.isKw("TABLE", "FUNCTION"):
		return notSupported(p.src, t.Pos, "DROP "+strings.ToUpper(t.Text))
	default:
		return p.errf(t.Pos, "Syntax error: Expected keyword TABLE, VIEW or SCHEMA but got %s", describe(t))
	}
	st.Drop, st.Type = d, "DROP_"+d.What
	if p.isKw("IF", "EXISTS") {
		d.IfExists = true
		p.i += 2
	}
	if d.What == "SCHEMA" {
		var err error
		if d.Name.Project, d.Name.Dataset, err = p.schemaName(); err != nil {
			return err
		}
		d.Name.Pos = t.Pos
		if p.isKw("CASCADE") {
			d.Cascade = true
			p.i++
		} else if p.isKw("RESTRICT") {
			p.i++
		}
		return p.end()
	}
	n, err := p.objectName()
	if err != nil {
		return err
	}
	d.Name = *n
	return p.end()
}

func (p *parser) alter(st *Statement) error {
	p.i++ // ALTER
	t := p.tok()
	if p.isKw("SCHEMA") || p.isKw("VIEW") {
		what := strings.ToUpper(t.Text)
		p.i++
		a := &AlterTable{What: what}
		st.AlterTable, st.Type = a, "ALTER_"+what
		if p.isKw("IF", "EXISTS") {
			a.IfExists = true
			p.i += 2
		}
		if what == "SCHEMA" {
			var err error
			if a.Name.Project, a.Name.Dataset, err = p.schemaName(); err != nil {
				return err
			}
			a.Name.Pos = t.Pos
		} else {
			n, err := p.objectName()
			if err != nil {
				return err
			}
			a.Name = *n
		}
		act := AlterAction{Pos: p.tok().Pos}
		if !p.isKw("SET", "OPTIONS") {
			if tt := p.tok(); tt.Ident {
				return notSupported(p.src, tt.Pos, "ALTER "+what+" "+strings.ToUpper(tt.Text))
			}
			return p.unexpected()
		}
		p.i++
		opts := tableOptions
		if what == "SCHEMA" {
			opts = schemaOptions
		}
		var err error
		if act.SetOptions, err = p.options(opts); err != nil {
			return err
		}
		if act.SetOptions == nil {
			act.SetOptions = []Option{}
		}
		a.Actions = []AlterAction{act}
		return p.end()
	}
	if !p.isKw("TABLE") {
		if t.Ident {
			return notSupported(p.src, t.Pos, "ALTER "+strings.ToUpper(t.Text))
		}
		return p.unexpected()
	}
	p.i++
	a := &AlterTable{What: "TABLE"}
	st.AlterTable, st.Type = a, "ALTER_TABLE"
	if p.isKw("IF", "EXISTS") {
		a.IfExists = true
		p.i += 2
	}
	n, err := p.objectName()
	if err != nil {
		return err
	}
	a.Name = *n
	for {
		act := AlterAction{Pos: p.tok().Pos}
		switch {
		case p.isKw("ADD", "COLUMN"):
			p.i += 2
			if p.isKw("IF", "NOT", "EXISTS") {
				act.IfNotExists = true
				p.i += 3
			}
			f, err := p.columnDef(true)
			if err != nil {
				return err
			}
			act.AddColumn = f
		case p.isKw("SET", "OPTIONS"):
			p.i++
			if act.SetOptions, err = p.options(tableOptions); err != nil {
				return err
			}
			if act.SetOptions == nil {
				act.SetOptions = []Option{}
			}
		case p.isKw("ADD", "PRIMARY", "KEY"):
			p.i += 3
			if act.AddPrimaryKey, err = p.primaryKey(act.Pos); err != nil {
				return err
			}
		case p.isKw("ALTER", "COLUMN"):
			p.i += 2
			if p.isKw("IF", "EXISTS") {
				act.IfExists = true
				p.i += 2
			}
			n, _, err := p.name()
			if err != nil {
				return err
			}
			ac := &AlterColumn{Name: n}
			act.AlterColumn = ac
			switch {
			case p.isKw("SET", "OPTIONS"):
				p.i++
				if ac.Options, err = p.options(columnOptions); err != nil {
					return err
				}
			case p.isKw("DROP", "NOT", "NULL"):
				p.i += 3
				ac.DropNotNull = true
			case p.isKw("DROP", "DEFAULT"):
				p.i += 2
				ac.DropDefault = true
			case p.isKw("SET", "DEFAULT"):
				p.i += 2
				start := p.i
				if err := p.defaultExpr(); err != nil {
					return err
				}
				ac.DefaultPos = p.toks[start].Pos
				ac.SetDefault = p.src[ac.DefaultPos:p.toks[p.i-1].End]
			case p.isKw("SET", "DATA", "TYPE"):
				p.i += 3
				if ac.SetType, err = p.fieldType(); err != nil {
					return err
				}
			default:
				if tt := p.tok(); tt.Ident {
					return notSupported(p.src, tt.Pos, "ALTER COLUMN ... "+strings.ToUpper(tt.Text))
				}
				return p.unexpected()
			}
		case p.isKw("DROP", "PRIMARY", "KEY"):
			p.i += 3
			act.DropPrimaryKey = true
			if p.isKw("IF", "EXISTS") {
				act.IfExists = true
				p.i += 2
			}
		default:
			if tt := p.tok(); tt.Ident {
				word := strings.ToUpper(tt.Text)
				if nx := p.toks[min(p.i+1, len(p.toks)-1)]; nx.Ident {
					word += " " + strings.ToUpper(nx.Text)
				}
				return notSupported(p.src, tt.Pos, "ALTER TABLE "+word)
			}
			return p.unexpected()
		}
		a.Actions = append(a.Actions, act)
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	return p.end()
}

// partitionBy parses the partition expression of CREATE TABLE:
// _PARTITIONDATE, DATE(_PARTITIONTIME), col, DATE(col),
// {DATE|DATETIME|TIMESTAMP}_TRUNC(col, unit) or
// RANGE_BUCKET(col, GENERATE_ARRAY(start, end[, interval])).
func (p *parser) partitionBy(ct *CreateTable) error {
	t := p.tok()
	ct.PartitionPos = t.Pos
	fn := ""
	if p.isOp("(") || t.EOF {
		return p.unexpected()
	}
	if p.toks[p.i+1].Op && p.toks[p.i+1].Text == "(" {
		fn = strings.ToUpper(t.Text)
		p.i += 2
	}
	col, _, err := p.name()
	if err != nil {
		return err
	}
	unit := "DAY"
	switch fn {
	case "":
	case "DATE":
	case "DATE_TRUNC", "DATETIME_TRUNC", "TIMESTAMP_TRUNC":
		if err := p.expectOp(","); err != nil {
			return err
		}
		u := p.tok()
		unit = strings.ToUpper(u.Text)
		allowed := map[string]bool{"MONTH": true, "YEAR": true}
		if fn != "DATE_TRUNC" {
			allowed["DAY"], allowed["HOUR"] = true, true
		}
		if !u.Ident || !allowed[unit] {
			return p.errf(u.Pos, "Unsupported partitioning granularity for %s: %s", fn, u.Text)
		}
		p.i++
	case "RANGE_BUCKET":
		if err := p.expectOp(","); err != nil {
			return err
		}
		if !p.isKw("GENERATE_ARRAY") {
			return p.errf(p.tok().Pos, "RANGE_BUCKET partitioning needs GENERATE_ARRAY(start, end[, interval])")
		}
		p.i++
		if err := p.expectOp("("); err != nil {
			return err
		}
		var args []int64
		for {
			neg := p.isOp("-")
			if neg {
				p.i++
			}
			a := p.tok()
			v, err := strconv.ParseInt(a.Text, 10, 64)
			if a.Ident || a.QIdent || a.Op || a.EOF || err != nil {
				return p.unexpected()
			}
			if neg {
				v = -v
			}
			args = append(args, v)
			p.i++
			if !p.isOp(",") {
				break
			}
			p.i++
		}
		if err := p.expectOp(")"); err != nil {
			return err
		}
		if len(args) < 2 || len(args) > 3 {
			return p.errf(ct.PartitionPos, "GENERATE_ARRAY takes 2 or 3 arguments")
		}
		if len(args) == 2 {
			args = append(args, 1)
		}
		if args[2] <= 0 || args[1] <= args[0] {
			return p.errf(ct.PartitionPos, "Invalid RANGE_BUCKET range: start %d, end %d, interval %d", args[0], args[1], args[2])
		}
		if err := p.expectOp(")"); err != nil {
			return err
		}
		ct.PartitionField, ct.PartitionType = col, "RANGE"
		ct.RangePartitioning = fmt.Appendf(nil, `{"field":%q,"range":{"end":"%d","interval":"%d","start":"%d"}}`, col, args[1], args[2], args[0])
		return nil
	default:
		return notSupported(p.src, t.Pos, "PARTITION BY "+fn)
	}
	if fn != "" {
		if err := p.expectOp(")"); err != nil {
			return err
		}
	}
	switch {
	case strings.EqualFold(col, "_PARTITIONDATE") && fn == "",
		strings.EqualFold(col, "_PARTITIONTIME") && fn != "":
		ct.TimePartitioning = fmt.Appendf(nil, `{"type":%q}`, unit)
		return nil
	case strings.HasPrefix(col, "_"):
		return p.errf(ct.PartitionPos, "Invalid partitioning column: %s", col)
	}
	ct.PartitionField, ct.PartitionType = col, fn
	ct.TimePartitioning = fmt.Appendf(nil, `{"field":%q,"type":%q}`, col, unit)
	return nil
}
