package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/iterator"
)

// QueryConfig is the query workload: the fixed set of benchQueries over a
// table written by the write workload (benchSchema).
type QueryConfig struct {
	Target
	// Rows, when positive, writes a new table of that many rows first
	// (RowBytes each) instead of querying an existing one.
	Rows     int64
	RowBytes int
	// Only, when set, runs the queries whose names it lists.
	Only []string
}

// benchQueries are the fixed set; %[1]s is the table. The filter query
// selects 1% of the ids: the executor scans every batch (it does not
// prune with zone maps yet), so it measures the filter's cost.
var benchQueries = []struct{ name, sql string }{
	{"agg", "SELECT COUNT(*), SUM(value), MIN(id), MAX(id) FROM %[1]s"},
	{"filter", "SELECT COUNT(*), SUM(value) FROM %[1]s WHERE id < %[2]d"},
	{"groupby", "SELECT COUNT(*), MAX(c) FROM (SELECT id - MOD(id, 4) AS k, COUNT(*) AS c FROM %[1]s GROUP BY k)"},
	{"join", "SELECT COUNT(*), SUM(a.value) FROM %[1]s a JOIN (SELECT id FROM %[1]s WHERE MOD(id, 10) = 0) b ON a.id = b.id"},
	{"orderby", "SELECT id, value FROM %[1]s ORDER BY value DESC LIMIT 10"},
	{"window", "SELECT COUNT(*) FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY cat ORDER BY value) AS rn FROM %[1]s) WHERE rn <= 10"},
	{"distinct", "SELECT COUNT(DISTINCT key) FROM %[1]s"},
}

// QueryRun is one query's measurement.
type QueryRun struct {
	Name    string  `json:"name"`
	SQL     string  `json:"sql"`
	Seconds float64 `json:"seconds"`
	// Bytes are the bytes of the columns the query read
	// (totalBytesProcessed); RowsPerSec is the table's rows per second.
	Bytes      int64   `json:"bytes_scanned"`
	RowsPerSec float64 `json:"rows_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	// PeakRSSMB is the server's peak RSS during the query (its high-water
	// mark reset before it), 0 without ServerPID.
	PeakRSSMB float64 `json:"server_peak_rss_mb,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// QueryResult is what the query workload measured.
type QueryResult struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	// RawRowsPerSec and RawMBPerSec are the engine's scan rate of the
	// columns id, value and cat through the Read API (one stream, Arrow,
	// decoded), measured in the same run.
	RawRowsPerSec float64    `json:"raw_rows_per_sec"`
	RawMBPerSec   float64    `json:"raw_mb_per_sec"`
	Queries       []QueryRun `json:"queries"`
}

// Print writes the human summary, or one JSON line.
func (r *QueryResult) Print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	fmt.Fprintf(w, "query table=%s rows=%d\n", r.Table, r.Rows)
	fmt.Fprintf(w, "  %-9s %8s %12s %9s %9s\n", "query", "seconds", "rows/s", "MB/s", "peak RSS")
	fmt.Fprintf(w, "  %-9s %8s %12.0f %9.1f %9s\n", "raw scan", "", r.RawRowsPerSec, r.RawMBPerSec, "")
	for _, q := range r.Queries {
		if q.Error != "" {
			fmt.Fprintf(w, "  %-9s FAILED: %s\n", q.Name, q.Error)
			continue
		}
		rss := ""
		if q.PeakRSSMB > 0 {
			rss = fmt.Sprintf("%.0f MB", q.PeakRSSMB)
		}
		fmt.Fprintf(w, "  %-9s %8.2f %12.0f %9.1f %9s\n", q.Name, q.Seconds, q.RowsPerSec, q.MBPerSec, rss)
	}
	return nil
}

// Query runs the query workload. A query that fails is reported and the
// run goes on; the error is the first failure.
func Query(ctx context.Context, cfg QueryConfig) (*QueryResult, error) {
	if cfg.Rows > 0 {
		wc := WriteConfig{Target: cfg.Target, Rows: cfg.Rows, RowBytes: cfg.RowBytes, RequestBytes: 1 << 20, Streams: 2, Mode: "default"}
		wc.Cleanup = false
		if _, err := Write(ctx, wc); err != nil {
			return nil, fmt.Errorf("write the table: %w", err)
		}
		cfg.Table = wc.Table
		if cfg.Table == "" {
			t, err := latestTable(ctx, cfg.Target)
			if err != nil {
				return nil, err
			}
			cfg.Table = t
		}
		if cfg.Cleanup {
			defer func() { _ = dropTable(cfg.Target) }()
		}
	} else if cfg.Table == "" {
		t, err := latestTable(ctx, cfg.Target)
		if err != nil {
			return nil, err
		}
		cfg.Table = t
	}
	res := &QueryResult{Table: cfg.tablePath()}
	start := time.Now()
	tot, err := readTable(ctx, cfg.Target, ReadConfig{Streams: 1, Columns: []string{"id", "value", "cat"}}, readVisitor{})
	if err != nil {
		return nil, fmt.Errorf("raw scan: %w", err)
	}
	secs := time.Since(start).Seconds()
	res.Rows = tot.rows.Load()
	res.RawRowsPerSec = float64(res.Rows) / secs
	res.RawMBPerSec = float64(tot.bytes.Load()) / secs / 1e6

	bq, err := bigquery.NewClient(ctx, cfg.Project, cfg.restOptions()...)
	if err != nil {
		return nil, err
	}
	defer bq.Close()
	table := fmt.Sprintf("`%s.%s.%s`", cfg.Project, cfg.Dataset, cfg.Table)
	var first error
	for _, bqq := range benchQueries {
		if len(cfg.Only) > 0 && !contains(cfg.Only, bqq.name) {
			continue
		}
		run := QueryRun{Name: bqq.name, SQL: fmt.Sprintf(bqq.sql, table, res.Rows/100)}
		if err := runQuery(ctx, bq, cfg.ServerPID, res.Rows, &run); err != nil {
			run.Error = err.Error()
			first = cmpErr(first, fmt.Errorf("%s: %w", run.Name, err))
		}
		res.Queries = append(res.Queries, run)
	}
	return res, first
}

func runQuery(ctx context.Context, bq *bigquery.Client, pid int, rows int64, run *QueryRun) error {
	if pid > 0 {
		// Reset the server's RSS high-water mark (VmHWM), so that the
		// sample after the query is this query's peak.
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	}
	start := time.Now()
	q := bq.Query(run.SQL)
	job, err := q.Run(ctx)
	if err != nil {
		return err
	}
	status, err := job.Wait(ctx)
	if err != nil {
		return err
	}
	if err := status.Err(); err != nil {
		return err
	}
	it, err := job.Read(ctx)
	if err != nil {
		return err
	}
	for {
		var row []bigquery.Value
		if err := it.Next(&row); errors.Is(err, iterator.Done) {
			break
		} else if err != nil {
			return err
		}
	}
	run.Seconds = time.Since(start).Seconds()
	if status.Statistics != nil {
		run.Bytes = status.Statistics.TotalBytesProcessed
		if st, ok := status.Statistics.Details.(*bigquery.QueryStatistics); ok && st != nil && st.TotalBytesProcessed > 0 {
			run.Bytes = st.TotalBytesProcessed
		}
	}
	run.RowsPerSec = float64(rows) / run.Seconds
	run.MBPerSec = float64(run.Bytes) / run.Seconds / 1e6
	if pid > 0 {
		run.PeakRSSMB = float64(sampleProc(pid).peakRSS) / (1 << 20)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(strings.TrimSpace(x), s) {
			return true
		}
	}
	return false
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
