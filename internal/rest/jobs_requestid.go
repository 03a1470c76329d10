package rest

// jobs.query's requestId: BigQuery's idempotency token of a query request.
// The Go client sets one on every jobs.query and retries the call on
// transport errors and 5xx with the same one; without it a lost answer to
// an INSERT ran the statement twice. The request's job id is derived from
// the project, the requestId and every member of the request that affects
// its outcome (all but timeoutMs, maxResults and formatOptions), so a
// retry names the job the first attempt started, across restarts too (the
// jobs log keeps ids), and another query under a reused requestId is
// another job. As BigQuery's, the token holds for requestIDLifetime.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"time"
)

// requestIDLifetime is how long a requestId names its job (BigQuery: "Its
// lifetime is limited to 15 minutes").
const requestIDLifetime = 15 * time.Minute

// requestJobID is the job id of jobs.query request in of project p, which
// carries a requestId.
func requestJobID(p string, in queryRequest) string {
	in.TimeoutMs, in.MaxResults, in.FormatOptions = nil, nil, nil
	b, _ := json.Marshal(in) // decoded from JSON: it encodes
	sum := sha256.Sum256(append([]byte(p+"\x00"), b...))
	return "job_" + base64.RawURLEncoding.EncodeToString(sum[:21])
}

// now is the handler's clock.
func (h *Handler) now() time.Time {
	if h.opts.Clock != nil {
		return h.opts.Clock()
	}
	return time.Now()
}
