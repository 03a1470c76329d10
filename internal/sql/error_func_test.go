package sql

import (
	"context"
	"errors"
	"testing"

	"github.com/bqstore/bqstore/internal/filter"
)

// TestErrorFunctionQuery: ERROR(message) in a query fails it with the
// message as written (an *filter.Error, which jobs report as invalidQuery,
// with no position: GoogleSQL's example reads "Found unexpected value:
// baz"), and only when a row reaches it.
func TestErrorFunctionQuery(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ q, want string }{
		{"SELECT CASE WHEN v = 'foo' THEN 'Value is foo.' WHEN v = 'bar' THEN 'Value is bar.' ELSE ERROR(CONCAT('Found unexpected value: ', v)) END AS new_value " +
			"FROM UNNEST(['foo', 'bar', 'baz']) AS v", "Found unexpected value: baz"},
		{"SELECT * FROM (SELECT -1 AS x) WHERE IF(x > 0, TRUE, ERROR(FORMAT('Error: x must be positive but is %t', x)))", "Error: x must be positive but is -1"},
		{"SELECT ERROR('boom') AS e", "boom"},
	} {
		_, err := Run(ctx, c.q, nil, Options{})
		var fe *filter.Error
		if !errors.As(err, &fe) || err.Error() != c.want {
			t.Errorf("%s: %v, want an error reading %q", c.q, err, c.want)
		}
	}
	for _, q := range []string{
		"SELECT IF(x > 0, x, ERROR('negative')) AS y FROM UNNEST([1, 2]) AS x",
		"SELECT ERROR('never') AS e FROM UNNEST([1]) AS x WHERE x > 5",
	} {
		if _, err := Run(ctx, q, nil, Options{}); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
