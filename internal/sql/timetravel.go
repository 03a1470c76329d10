package sql

import (
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// FOR SYSTEM_TIME AS OF: a table read as of a time. The expression is a
// constant TIMESTAMP (CURRENT_TIMESTAMP() is the query's time,
// Options.Now), evaluated once; the resolver opens the table at that
// time (TableName.AsOf), or answers BigQuery's error for a time it does
// not keep.

// systemTime parses FOR SYSTEM_TIME AS OF expr (at FOR).
func (p *parser) systemTime() (*Span, error) {
	p.i++
	switch {
	case p.isKw("SYSTEM_TIME"):
		p.i++
	case p.isKw("SYSTEM", "TIME"):
		p.i += 2
	default:
		return nil, p.errf(p.tok().Pos, "Syntax error: Expected keyword SYSTEM_TIME but got %s", describe(p.tok()))
	}
	if !p.isKw("AS", "OF") {
		return nil, p.errf(p.tok().Pos, "Syntax error: Expected keyword AS OF but got %s", describe(p.tok()))
	}
	p.i += 2
	sp, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &sp, nil
}

// asOf evaluates the time of a FOR SYSTEM_TIME AS OF.
func (r *runner) asOf(sp Span) (time.Time, error) {
	x, err := r.compileText(r.text(sp.pos(), sp.end()), &schema.Schema{}, nil)
	if err != nil {
		return time.Time{}, err
	}
	switch x.Type() {
	case "TIMESTAMP":
	case "STRING":
		// A literal coerces, as to any TIMESTAMP argument.
		t := strings.TrimSpace(r.src[sp.pos():sp.end()])
		if len(sp.toks) != 1 || !(strings.HasPrefix(t, "'") || strings.HasPrefix(t, "\"")) {
			return time.Time{}, r.errf(sp.pos(), "FOR SYSTEM_TIME AS OF must be of type TIMESTAMP but was of type STRING")
		}
		if x, err = r.compileText(r.castText(sp), &schema.Schema{}, nil); err != nil {
			return time.Time{}, err
		}
	default:
		return time.Time{}, r.errf(sp.pos(), "FOR SYSTEM_TIME AS OF must be of type TIMESTAMP but was of type %s", x.Type())
	}
	if len(x.Columns()) > 0 {
		return time.Time{}, r.errf(sp.pos(), "FOR SYSTEM_TIME AS OF expression must be constant")
	}
	v, err := x.Values(r.ctx, nil, 1)
	if err != nil {
		return time.Time{}, err
	}
	us, ok := v[0].(int64)
	if !ok {
		return time.Time{}, r.errf(sp.pos(), "FOR SYSTEM_TIME AS OF must not be NULL")
	}
	return time.UnixMicro(us).UTC(), nil
}

// castText is the span's text as CAST(text AS TIMESTAMP), at the span's
// position.
func (r *runner) castText(sp Span) exprText {
	return exprText{at: sp.pos(), text: "CAST(" + r.src[sp.pos():sp.end()] + " AS TIMESTAMP)"}
}

// clock is the query's CURRENT_TIMESTAMP option, if Options.Now is set.
func (r *runner) clock() []filter.Option {
	if r.opts.Now.IsZero() {
		return nil
	}
	now := r.opts.Now
	return []filter.Option{filter.WithClock(func() time.Time { return now })}
}
