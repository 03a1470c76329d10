package sql

import (
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// This file parses the DDL statements CREATE TABLE|VIEW|SCHEMA and
// DROP TABLE|VIEW|SCHEMA, and the object names they take. Column lists
// and types are in parse_ddl_columns.go, OPTIONS and PARTITION BY in
// parse_ddl_options.go, ALTER in parse_ddl_alter.go.

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
	temp := false
	if p.isKw("TEMP", "TABLE") || p.isKw("TEMPORARY", "TABLE") {
		temp = true
		p.i++
	}
	t := p.tok()
	switch {
	case p.isKw("TEMP") || p.isKw("TEMPORARY"):
		return notSupported(p.src, t.Pos, "CREATE TEMP "+strings.ToUpper(p.toks[min(p.i+1, len(p.toks)-1)].Text))
	case p.isKw("EXTERNAL") || p.isKw("SNAPSHOT") || p.isKw("MATERIALIZED") || p.isKw("FUNCTION") ||
		p.isKw("PROCEDURE") || p.isKw("MODEL") || p.isKw("ROW") || p.isKw("SEARCH") || p.isKw("VECTOR") ||
		p.isKw("AGGREGATE") || p.isKw("TABLE", "FUNCTION"):
		return notSupported(p.src, t.Pos, "CREATE "+strings.ToUpper(t.Text))
	case p.isKw("TABLE"):
		p.i++
		ct := &CreateTable{OrReplace: orReplace, Temp: temp}
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
		if temp && (n.Dataset != "" || n.Project != "") {
			return p.errf(n.Pos, "Temporary tables may not be qualified")
		}
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
			ct.Query, ct.QueryPos = p.src, p.tok().Pos
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
		cv.QueryText, cv.QueryPos = p.src, p.tok().Pos
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
