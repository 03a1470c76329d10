package sql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDeepSubqueries: queries nested deeper than maxQueryDepth are
// refused at once. Scalar subqueries 4,000 deep took 23 s (each level
// re-tokenized the text below it), 20,000 deep about ten minutes.
func TestDeepSubqueries(t *testing.T) {
	resolve := func(context.Context, TableName) (Table, error) { return nil, errors.New("no tables") }
	for _, c := range []struct {
		name string
		q    string
	}{
		{"scalar", "SELECT (" + strings.Repeat("SELECT (", 4000) + "1" + strings.Repeat(")", 4000) + ")"},
		{"from", "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", 4000) + "(SELECT 1)" + strings.Repeat(")", 4000)},
		{"in", "SELECT 1 IN (" + strings.Repeat("SELECT 1 IN (", 4000) + "SELECT 1" + strings.Repeat(")", 4000) + ")"},
	} {
		t.Run("kind="+c.name, func(t *testing.T) {
			start := time.Now()
			_, err := Run(context.Background(), c.q, resolve, Options{})
			if err == nil || !strings.Contains(err.Error(), "too many subqueries") {
				t.Fatalf("err = %v, want too many subqueries (after %v)", err, time.Since(start))
			}
		})
	}
	// 100 levels still run.
	q := "SELECT (" + strings.Repeat("SELECT (", 100) + "1" + strings.Repeat(")", 100) + ")"
	if _, err := Run(context.Background(), q, resolve, Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestRunRecoversPanic: a panic inside Run (a bug) is returned as an
// error; a job's goroutine calls Run and nothing above it recovers, so
// it ended the server.
func TestRunRecoversPanic(t *testing.T) {
	resolve := func(context.Context, TableName) (Table, error) { panic("resolver bug") }
	_, err := Run(context.Background(), "SELECT * FROM t", resolve, Options{})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "resolver bug" || len(pe.Stack) == 0 {
		t.Fatalf("err = %v, want a PanicError", err)
	}
}
