package cli

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/bqstore/bqstore/ingest"
)

// TestIngestRouteUsage: --route errors are usage errors, found before
// anything is dialled.
func TestIngestRouteUsage(t *testing.T) {
	base := []string{"--endpoint", "x:1"}
	for _, args := range [][]string{
		{"--table", "p:d.t", "--route", "a=p:d.a", "--source", "kafka://h/a?group=g"},
		{"--route", "a=p:d.a", "--source", "file:x", "--state-dir", "s"},
		{"--route", "a", "--source", "kafka://h/?group=g"},
		{"--route", "a=", "--source", "kafka://h/?group=g"},
		{"--route", "=p:d.a", "--source", "kafka://h/?group=g"},
		{"--route", "a=d", "--source", "kafka://h/?group=g"},
		{"--route", "a=p:d.a,,b=p:d.b", "--source", "kafka://h/?group=g"},
		{"--route", "a=p:d.x,a=p:d.y", "--source", "kafka://h/?group=g"},
		{"--route", "a=p:d.x", "--source", "kafka://h/a,b?group=g"},       // b has no route
		{"--route", "a=p:d.x,c=p:d.y", "--source", "kafka://h/a?group=g"}, // c is not consumed
		{"--route", "a=p:d.x", "--dead-letter-table", "p:d.x", "--source", "kafka://h/?group=g"},
		{"--source", "kafka://h/?group=g"}, // no topic and no route
	} {
		env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, LookupEnv: func(string) (string, bool) { return "", false }}
		err := runIngest(context.Background(), env, append(append([]string{}, base...), args...))
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: err = %v, want a usage error", args, err)
		}
	}
}

func TestParseRoutes(t *testing.T) {
	got, err := parseRoutes("a=p:d.x, b=d.y", "q")
	want := []ingest.Route{{Topic: "a", Table: "projects/p/datasets/d/tables/x"}, {Topic: "b", Table: "projects/q/datasets/d/tables/y"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseRoutes = %v, %v; want %v", got, err, want)
	}
}
