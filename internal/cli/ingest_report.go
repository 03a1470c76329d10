package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bqstore/bqstore/ingest"
)

// What ingest tells its user: progress while it runs, a summary when it
// ends, one line when interrupted.

// ExitInterrupted is the exit code of a command stopped by SIGINT or
// SIGTERM (128 + SIGINT, as shells report it).
const ExitInterrupted = 130

// errInterrupted ends a command stopped by a signal; Main prints it as
// one line and exits ExitInterrupted.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

var errIngestInterrupted = &interruptedError{msg: "interrupted; run the same command to continue"}

// runIngest is the ingest command: runIngestCmd, with its errors said for
// people (one line when interrupted, no doubled package prefixes).
func runIngest(ctx context.Context, env *Env, args []string) error {
	err := runIngestCmd(ctx, env, args)
	switch {
	case err == nil:
		return nil
	case interrupted(ctx, err):
		return errIngestInterrupted
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	return tidyError(err)
}

// ingestCounts are the figures of a run so far.
type ingestCounts struct {
	rows, deadLetters, batches, bytes float64
}

func readCounts(m *ingest.Metrics) ingestCounts {
	var rows, dead, bytes, vis dto.Metric
	_ = m.RowsCommitted.Write(&rows)
	_ = m.DeadLetters.Write(&dead)
	_ = m.BytesCommitted.Write(&bytes)
	_ = m.EventToVisible.Write(&vis) // one sample per batch committed
	return ingestCounts{
		rows:        rows.GetCounter().GetValue(),
		deadLetters: dead.GetCounter().GetValue(),
		batches:     float64(vis.GetHistogram().GetSampleCount()),
		bytes:       bytes.GetCounter().GetValue(),
	}
}

// logSummary logs what the run did, as ingestSummary says it, with the
// figures as attributes too.
func logSummary(logger *slog.Logger, verb string, m *ingest.Metrics, elapsed time.Duration, deadPath string) {
	c := readCounts(m)
	logger.Info(ingestSummary(verb, c, elapsed, deadPath), "rows", int64(c.rows), "batches", int64(c.batches),
		"bytes", int64(c.bytes), "dead_letters", int64(c.deadLetters), "elapsed", elapsed.Round(time.Millisecond).String())
}

// ingestSummary is the message of a run's last log line: "done: 1200 rows
// committed in 3 batches (48.0 KB), 2 dead letters (in dead.ndjson),
// 1.2s" (verb "stopped" for an interrupted run).
func ingestSummary(verb string, c ingestCounts, elapsed time.Duration, deadPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %.0f %s committed in %.0f %s (%s)", verb, c.rows, plural(c.rows, "row"), c.batches, plural(c.batches, "batch"), humanBytes(c.bytes))
	switch {
	case deadPath != "":
		fmt.Fprintf(&b, ", %.0f dead %s (in %s)", c.deadLetters, plural(c.deadLetters, "letter"), deadPath)
	case c.deadLetters > 0:
		fmt.Fprintf(&b, ", %.0f dead %s", c.deadLetters, plural(c.deadLetters, "letter"))
	}
	fmt.Fprintf(&b, ", %s", elapsed.Round(time.Millisecond))
	return b.String()
}

func plural(n float64, word string) string {
	if n == 1 {
		return word
	}
	if strings.HasSuffix(word, "ch") {
		return word + "es"
	}
	return word + "s"
}

// humanBytes renders n bytes as "512 B", "48.0 KB", "1.3 GB".
func humanBytes(n float64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%.0f B", n)
	}
	div, exp := float64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", n/div, "KMGTP"[exp])
}

// ingestProgressEvery is how often a run whose stderr is not a terminal
// logs a progress line.
const ingestProgressEvery = 30 * time.Second

// logProgress logs a progress line every interval until stop is called
// (for stderr that is not a terminal: logs, CI, systemd).
func logProgress(logger *slog.Logger, m *ingest.Metrics, t0 time.Time, every time.Duration) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				c := readCounts(m)
				logger.Info("progress: "+ingestProgress(m, time.Since(t0)),
					"rows", int64(c.rows), "dead_letters", int64(c.deadLetters), "batches", int64(c.batches))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// tidyError drops the package prefixes ("ingest: ", "rows: ") inside a
// message that Main already prefixes with "bqstore ingest: ", keeping the
// error chain for errors.Is.
func tidyError(err error) error {
	msg := err.Error()
	tidy := msg
	for _, p := range []string{"ingest: ", "rows: "} {
		for strings.HasPrefix(tidy, p) {
			tidy = strings.TrimPrefix(tidy, p)
		}
		tidy = strings.ReplaceAll(tidy, ": "+p, ": ")
	}
	if tidy == msg {
		return err
	}
	return &tidiedError{msg: tidy, err: err}
}

type tidiedError struct {
	msg string
	err error
}

func (e *tidiedError) Error() string { return e.msg }
func (e *tidiedError) Unwrap() error { return e.err }

// ctxReader makes reads of a reader that may block for ever (standard
// input from a pipe or a terminal) return once ctx ends, so that Ctrl-C
// stops `ingest --source file:-` while it waits for input.
//
// Goroutine lifetime: one pump goroutine reads r into a channel; it ends
// when a read of r returns an error (EOF included) or, after ctx ended,
// when its read in progress returns. A read that never returns ends with
// the process.
type ctxReader struct {
	ctx  context.Context
	once sync.Once
	r    io.Reader
	ch   chan readResult
	buf  []byte // unread rest of the last chunk
	err  error  // sticky
}

type readResult struct {
	b   []byte
	err error
}

func newCtxReader(ctx context.Context, r io.Reader) *ctxReader {
	return &ctxReader{ctx: ctx, r: r, ch: make(chan readResult)}
}

func (c *ctxReader) pump() {
	for {
		b := make([]byte, 64<<10)
		n, err := c.r.Read(b)
		select {
		case c.ch <- readResult{b[:n], err}:
		case <-c.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	c.once.Do(func() { go c.pump() })
	select {
	case r := <-c.ch:
		n := copy(p, r.b)
		c.buf = r.b[n:]
		c.err = r.err
		if len(c.buf) == 0 && r.err != nil {
			return n, r.err
		}
		return n, nil
	case <-c.ctx.Done():
		c.err = c.ctx.Err()
		return 0, c.err
	}
}

// interrupted reports whether a run that failed with err was stopped by a
// signal: ctx, the command's context, ended (whatever error the stop
// surfaced as).
func interrupted(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil
}
