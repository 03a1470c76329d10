package sql

import (
	"context"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/schema"
)

// Query parameters reach expressions through the expression layer
// (filter.WithParams, passed by compileText and by the parser for the
// constant expressions it compiles); this file has what the statement
// parser itself resolves.

// countParam is LIMIT or OFFSET given by a query parameter: an INT64, not
// NULL, not negative.
func (p *parser) countParam(clause string, t filter.Token) (int64, error) {
	x, err := filter.CompileScalar(p.src[t.Pos:t.End], &schema.Schema{}, filter.WithParams(p.params), filter.At(p.src[:t.Pos]))
	if err != nil {
		return 0, err
	}
	if x.Type() != "INT64" {
		return 0, p.errf(t.Pos, "%s expects an integer literal or parameter", clause)
	}
	v, err := x.Values(context.Background(), nil, 1)
	if err != nil {
		return 0, err
	}
	n, ok := v[0].(int64)
	if !ok {
		return 0, p.errf(t.Pos, "%s must not be null", clause)
	}
	if n < 0 {
		return 0, p.errf(t.Pos, "%s expects a non-negative integer literal or parameter", clause)
	}
	p.i++
	return n, nil
}
