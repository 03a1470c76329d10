package server

import (
	"context"
	"net/http"
	"time"
)

// countHTTP counts h's requests in flight in s.httpBusy.
func (s *Server) countHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.httpBusy.Add(1)
		defer s.httpBusy.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// shutdownHTTP stops the public and admin HTTP servers: no new
// connections, requests in flight finish (up to ctx's deadline). It
// returns when no handler runs any more.
//
// net/http's Shutdown alone closes a connection that never carried a
// request only once it is 5 s old, and clients open such spares (Go's and
// Node's clients race a second connection for concurrent requests), so a
// SIGTERM waited 5 s for nothing. Once no request is in flight, the rest
// is cut with Close. A request that arrives on a spare in that instant is
// cut too, like any request to a stopping server (the client sees a
// connection error, retries), and its handler is waited for below before
// the engine closes under it.
func (s *Server) shutdownHTTP(ctx context.Context) error {
	srvs := []*http.Server{s.httpSrv}
	if s.adminSrv != nil {
		srvs = append(srvs, s.adminSrv)
	}
	done := make(chan error, len(srvs))
	for _, h := range srvs {
		go func() { done <- h.Shutdown(ctx) }()
	}
	var err error
	pending := len(srvs)
	cut := false
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for pending > 0 {
		select {
		case e := <-done:
			pending--
			if e != nil && err == nil {
				err = e
			}
		case <-tick.C:
			if !cut && s.httpBusy.Load() == 0 {
				cut = true
				for _, h := range srvs {
					_ = h.Close()
				}
			}
		}
	}
	// Handlers of cut connections may still run: the engine must outlive
	// them. Shutdown returned on ctx's deadline, so they get no longer.
	for s.httpBusy.Load() > 0 && ctx.Err() == nil {
		<-tick.C
	}
	return err
}
