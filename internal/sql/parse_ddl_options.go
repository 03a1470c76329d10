package sql

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// This file parses OPTIONS(...) lists and CREATE TABLE's PARTITION BY.

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
	text := p.src[sp.pos():sp.end()]
	if want == "TIMESTAMP" && len(sp.toks) == 1 && isStringLit(sp.toks[0]) {
		text = "TIMESTAMP " + text
	}
	x, err := filter.CompileScalar(text, &schema.Schema{}, filter.At(p.src[:sp.pos()]))
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
