package sql

import "strings"

// This file parses ALTER TABLE|VIEW|SCHEMA.

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
		case p.isKw("RENAME", "TO"):
			p.i += 2
			if act.RenameTo, err = p.objectName(); err != nil {
				return err
			}
			if len(a.Actions) > 0 || p.isOp(",") {
				return p.errf(act.Pos, "ALTER TABLE RENAME TO cannot be combined with other actions")
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
