package ingest

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Health reports the partitions a run paused and why: a partition whose
// worker fails (rows refused for good without a dead-letter sink, a
// missing table, a sealed stream not found, records deleted before they
// were committed, ...) is paused, not the run: it stays assigned to this
// member, its fetching stops, and the other partitions go on. It resumes
// only when the group takes it away (revoke, lost, restart): its next
// owner tries it again. Serve it on /healthz (ServeHTTP).
//
// A Health may be shared by runs; it is safe for concurrent use.
type Health struct {
	mu     sync.Mutex
	paused map[string]PausedPartition
}

// PausedPartition is one paused partition.
type PausedPartition struct {
	Partition string    `json:"partition"`
	Reason    string    `json:"reason"`
	Since     time.Time `json:"since"`
	// Err is the worker's error (not in the JSON form).
	Err error `json:"-"`
}

// NewHealth returns a Health with nothing paused.
func NewHealth() *Health {
	return &Health{paused: map[string]PausedPartition{}}
}

func (h *Health) pause(key string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paused[key] = PausedPartition{Partition: key, Reason: err.Error(), Since: time.Now().UTC(), Err: err}
}

func (h *Health) resume(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.paused, key)
}

// Paused returns the paused partitions, by partition key.
func (h *Health) Paused() []PausedPartition {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]PausedPartition, 0, len(h.paused))
	for _, p := range h.paused {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PausedPartition) int {
		switch {
		case a.Partition < b.Partition:
			return -1
		case a.Partition > b.Partition:
			return 1
		}
		return 0
	})
	return out
}

// healthReport is the JSON body of /healthz.
type healthReport struct {
	Status string            `json:"status"` // "ok", or "degraded" while a partition is paused
	Paused []PausedPartition `json:"paused"`
}

// ServeHTTP answers 200 {"status":"ok","paused":[]} while no partition is
// paused, and 503 {"status":"degraded","paused":[{"partition","reason",
// "since"}]} otherwise (a readiness probe that fails routes an operator
// to the reason; as a liveness probe it would restart the member, which
// retries the partitions, and if the cause stays, pauses them again).
func (h *Health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r := healthReport{Status: "ok", Paused: h.Paused()}
	code := http.StatusOK
	if len(r.Paused) > 0 {
		r.Status, code = "degraded", http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(r)
}
