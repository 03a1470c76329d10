package ingest_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// timeoutOnce fails its first round trip as a dial that timed out (what
// a frozen machine makes of a dial to a live server) and then sends.
type timeoutOnce struct{ failed bool }

func (r *timeoutOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if !r.failed {
		r.failed = true
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// The soak's seed 115 failed on "clearing server faults: dial tcp ...:
// i/o timeout" after the machine froze for 78 s; the run itself held
// every invariant (its replay passes). A transport failure is tried again.
func TestPutFaultsRetriesTransportErrors(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	}))
	defer srv.Close()
	c := &http.Client{Transport: &timeoutOnce{}}
	if err := putFaults(c, srv.Listener.Addr().String(), 7, "append.reset:times=1", t.Logf); err != nil {
		t.Fatalf("putFaults: %v", err)
	}
	if got != "append.reset:times=1" {
		t.Fatalf("server got spec %q", got)
	}
}

// An HTTP answer that is an error is not retried: the server said no.
func TestPutFaultsAnswerNotRetried(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		http.Error(w, "bad spec", http.StatusBadRequest)
	}))
	defer srv.Close()
	err := putFaults(http.DefaultClient, srv.Listener.Addr().String(), 7, "nonsense", t.Logf)
	var ue interface{ Timeout() bool }
	if err == nil || errors.As(err, &ue) || calls != 1 {
		t.Fatalf("err %v after %d calls, want one 400", err, calls)
	}
}
