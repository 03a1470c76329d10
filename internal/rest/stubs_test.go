package rest

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStubsMatchNotServed: every stub described in the discovery document
// is a method of notServed under the same name (so the server answers it
// with that name's 501), and none is a served route.
func TestStubsMatchNotServed(t *testing.T) {
	served := map[string]bool{}
	for _, rt := range routes {
		served[rt.id] = true
	}
	for _, st := range stubs {
		if !st.stub {
			t.Errorf("%s: in stubs without stub set", st.id)
		}
		if served[st.id] {
			t.Errorf("%s: both served and a stub", st.id)
		}
		path := "/bigquery/v2/" + strings.NewReplacer("{projectId}", "p", "{jobId}", "j").Replace(st.path)
		name, _ := notServedMethod(httptest.NewRequest(st.method, path, nil))
		if name != st.id {
			t.Errorf("stub %s (%s %s): notServed names it %q", st.id, st.method, path, name)
		}
	}
}
