package rest_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestScriptKeyResultStatement: scriptOptions.keyResultStatement chooses
// the statement whose rows are a script's result (LAST by default, or
// FIRST_SELECT), by jobs.insert and is echoed in the job's
// configuration; an unknown value is a 400.
func TestScriptKeyResultStatement(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	for i, c := range []struct{ opts, want string }{
		{``, `"v":"2"`},
		{`,"scriptOptions":{"keyResultStatement":"LAST"}`, `"v":"2"`},
		{`,"scriptOptions":{"keyResultStatement":"FIRST_SELECT","statementTimeoutMs":"1000"}`, `"v":"1"`},
	} {
		id := fmt.Sprintf("k%d", i)
		body := `{"jobReference":{"jobId":"` + id + `"},"configuration":{"query":{"query":"SELECT 1 AS a; SELECT 2 AS a","useLegacySql":false` + c.opts + `}}}`
		code, b := do(t, base, "POST", "/projects/p/jobs", body)
		if code != 200 {
			t.Fatalf("%s: %d %s", body, code, b)
		}
		if c.opts != "" && !strings.Contains(string(b), `"scriptOptions":{"keyResultStatement"`) {
			t.Errorf("%s: scriptOptions not echoed: %s", body, b)
		}
		code, b = do(t, base, "GET", "/projects/p/queries/"+id, "")
		if code != 200 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: getQueryResults %d %s, want %s", body, code, b, c.want)
		}
	}
	code, b := do(t, base, "POST", "/projects/p/jobs", `{"configuration":{"query":{"query":"SELECT 1","useLegacySql":false,"scriptOptions":{"keyResultStatement":"FIRST"}}}}`)
	if code != 400 || !strings.Contains(string(b), "keyResultStatement") {
		t.Errorf("keyResultStatement FIRST: %d %s, want 400", code, b)
	}
}

// TestSessionConnectionPropertyRefused: jobs.query naming a session
// (the session_id connection property) or asking for one is refused
// with the "not supported yet" 400, never run outside the session.
func TestSessionConnectionPropertyRefused(t *testing.T) {
	e := newEnv(t)
	base := e.srv.URL
	for _, body := range []string{
		`{"query":"SELECT 1","useLegacySql":false,"connectionProperties":[{"key":"session_id","value":"abc"}]}`,
		`{"query":"SELECT 1","useLegacySql":false,"createSession":true}`,
	} {
		code, b := do(t, base, "POST", "/projects/p/queries", body)
		if code != 400 || !strings.Contains(string(b), "not supported yet by bqstore: sessions") {
			t.Errorf("%s: %d %s, want the sessions refusal", body, code, b)
		}
	}
	code, b := do(t, base, "POST", "/projects/p/queries", `{"query":"SELECT 1","useLegacySql":false,"connectionProperties":[{"key":"time_zone","value":"UTC"}]}`)
	if code != 200 {
		t.Errorf("time_zone connection property: %d %s", code, b)
	}
}
