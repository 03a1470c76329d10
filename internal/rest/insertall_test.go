package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

func TestInsertIDWindow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	d := newInsertIDs(time.Minute, func() time.Time { return now }, 1<<20)
	if dup := d.claim("t1", []string{"a", "b", "a", ""}); fmt.Sprint(dup) != "[false false true false]" {
		t.Fatalf("first claim: %v", dup)
	}
	// Same ids: duplicates within the window, in the same table only.
	if dup := d.claim("t1", []string{"a", "c", ""}); fmt.Sprint(dup) != "[true false false]" {
		t.Fatalf("second claim: %v", dup)
	}
	if dup := d.claim("t2", []string{"a"}); dup[0] {
		t.Fatalf("id of another table is a duplicate")
	}
	// Released ids (rows not written) are not duplicates any more.
	d.release("t1", []string{"b"}, []bool{true})
	if dup := d.claim("t1", []string{"b"}); dup[0] {
		t.Fatalf("released id is a duplicate")
	}
	// Past the window everything is forgotten, including the stale queue
	// entry of the released-then-reclaimed "b".
	now = now.Add(time.Minute)
	if dup := d.claim("t1", []string{"a", "b", "c"}); fmt.Sprint(dup) != "[false false false]" {
		t.Fatalf("after the window: %v", dup)
	}
	if n := d.size(); n != 3 {
		t.Fatalf("%d ids remembered, want 3", n)
	}
	// The memory bound forgets the oldest first.
	small := newInsertIDs(time.Minute, func() time.Time { return now }, 3*(insertIDOverhead+3))
	small.claim("t", []string{"aa", "bb", "cc", "dd"})
	if dup := small.claim("t", []string{"dd"}); !dup[0] {
		t.Fatalf("newest id forgotten")
	}
	if dup := small.claim("t", []string{"aa"}); dup[0] {
		t.Fatalf("oldest id kept past the memory bound")
	}
	// A negative window turns de-duplication off.
	off := newInsertIDs(-1, time.Now, 1<<20)
	off.claim("t", []string{"a"})
	if dup := off.claim("t", []string{"a"}); dup[0] {
		t.Fatalf("de-duplication with the window off")
	}
}

// FuzzInsertAllRequest: the insertAll body parser never panics, answers
// a *Error for what it refuses, and what it accepts has at most
// insertAllMaxRows rows whose json is an object.
func FuzzInsertAllRequest(f *testing.F) {
	for _, s := range []string{
		`{"rows":[{"insertId":"a","json":{"id":1,"name":"x"}}]}`,
		`{"kind":"bigquery#tableDataInsertAllRequest","skipInvalidRows":true,"ignoreUnknownValues":false,"templateSuffix":"_s","traceId":"t","rows":[{"json":{}}]}`,
		`{"projectId":"p","datasetId":"d","tableId":"t","rows":[{"insert_id":"a","json":{"r":{"x":[1,2]}}}]}`,
		`{"tableId":"u","rows":[]}`,
		`{"rows":[{"json":[1]}]}`,
		`{"rows":null,"skip_invalid_rows":null}`,
		`{"bogus":1}`,
		`[]`,
		`{"rows":[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		pp := pathParams{project: "p", dataset: "d", table: "t"}
		req, err := parseInsertAll(body, pp)
		// The one-pass decoder and the member-by-member check agree,
		// but for names in another case, which only the first takes.
		slow, serr := checkInsertAll(body, pp)
		switch {
		case err == nil && serr == nil:
			if !reflect.DeepEqual(req, slow) {
				t.Fatalf("parsers disagree on %q:\n%+v\n%+v", body, req, slow)
			}
		case err == nil:
			if !strings.Contains(serr.Error(), "Unknown name") {
				t.Fatalf("%q: accepted, but checkInsertAll says %v", body, serr)
			}
		case serr == nil:
			t.Fatalf("%q: refused (%v), but checkInsertAll accepts it", body, err)
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not a wire error", err, err)
			}
			return
		}
		if len(req.rows) > insertAllMaxRows {
			t.Fatalf("%d rows accepted", len(req.rows))
		}
		for i, r := range req.rows {
			if r.json == nil {
				continue
			}
			if t0 := bytes.TrimLeft(r.json, " \t\r\n"); !json.Valid(r.json) || len(t0) == 0 || t0[0] != '{' {
				t.Fatalf("row %d json %q is not an object", i, r.json)
			}
		}
	})
}

// TestConverterCache: a converter is handed out to one request at a time,
// reused after put, and the idle ones are bounded.
func TestConverterCache(t *testing.T) {
	sch := &schema.Schema{Fields: []*schema.Field{{Name: "id", Type: schema.Integer}}}
	var c converters
	k := convKey{table: "t", version: 1}
	a, err := c.get(k, sch)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.get(k, sch)
	if a == b {
		t.Fatal("one converter handed out twice")
	}
	c.put(k, a)
	if got, _ := c.get(k, sch); got != a {
		t.Fatal("idle converter not reused")
	}
	for i := 0; i < 3*maxIdleConverters; i++ {
		conv, _ := c.get(convKey{table: fmt.Sprint(i)}, sch)
		c.put(convKey{table: fmt.Sprint(i)}, conv)
	}
	if c.n > maxIdleConverters {
		t.Fatalf("%d idle converters, the bound is %d", c.n, maxIdleConverters)
	}
	if _, err := c.get(convKey{table: "empty"}, &schema.Schema{}); err == nil {
		t.Fatal("converter for a table without columns")
	}
}
