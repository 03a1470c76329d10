package cli

// Rows for people: head prints the first rows of a table through REST
// tabledata.list (what bq head does); extract copies a table, or the rows
// and columns of it that --where and --columns keep, into a Parquet, Arrow
// IPC, CSV or newline-delimited JSON file through the Storage Read API,
// reading several streams in parallel. Rows from different streams
// interleave, so the output is in no particular order, as BigQuery's own
// exports are.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/internal/rowjson"
	"github.com/bqstore/bqstore/internal/schema"
)

// ---- head ----

func runHead(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "head", "[-n N] [--start I] [--columns a,b] [--format pretty|json|prettyjson|csv] [--max-width W] [project:]dataset.table")
	af := addAPIFlags(env, fs)
	af.csv = true
	n := fs.Int64("n", 100, "number of rows to print")
	start := fs.Int64("start", 0, "index of the first row")
	cols := fs.String("columns", "", "comma-separated columns to print (nested fields as rec.field); default all")
	maxWidth := fs.Int("max-width", 50, "pretty format: cut cells wider than this many characters (0: never)")
	pos, err := parseFlags(fs, expandShortN(args))
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one table reference, got %d arguments", len(pos))
	}
	r, err := parseRef(pos[0], af.project)
	if err != nil {
		return err
	}
	if r.table == "" {
		return usagef("%q is not a table reference", pos[0])
	}
	if *n < 0 || *start < 0 {
		return usagef("-n and --start must not be negative")
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	var tbl apiTable
	if err := c.call(ctx, http.MethodGet, tablePath(r.project, r.dataset, r.table), nil, nil, &tbl); err != nil {
		return err
	}
	if tbl.Schema == nil {
		tbl.Schema = &schema.Schema{}
	}
	var selected []string
	if *cols != "" {
		selected = strings.Split(*cols, ",")
	}
	sch, err := rowjson.SelectFields(tbl.Schema, selected)
	if err != nil {
		return usagef("--columns: %s", strings.TrimPrefix(err.Error(), "rowjson: "))
	}

	var rows [][]any // cells as headValue gives them
	token := ""
	for int64(len(rows)) < *n {
		q := url.Values{}
		q.Set("maxResults", strconv.FormatInt(min(*n-int64(len(rows)), 10000), 10))
		q.Set("formatOptions.useInt64Timestamp", "true")
		if token != "" {
			q.Set("pageToken", token)
		} else {
			q.Set("startIndex", strconv.FormatInt(*start, 10))
		}
		if len(selected) > 0 {
			q.Set("selectedFields", *cols)
		}
		var page struct {
			PageToken string `json:"pageToken"`
			Rows      []struct {
				F []struct {
					V json.RawMessage `json:"v"`
				} `json:"f"`
			} `json:"rows"`
		}
		if err := c.call(ctx, http.MethodGet, tablePath(r.project, r.dataset, r.table)+"/data?"+q.Encode(), nil, nil, &page); err != nil {
			return err
		}
		for _, row := range page.Rows {
			if len(row.F) != len(sch.Fields) {
				return fmt.Errorf("a row has %d cells, the schema %d columns", len(row.F), len(sch.Fields))
			}
			cells := make([]any, len(row.F))
			for i, f := range sch.Fields {
				v, err := headValue(f, row.F[i].V, false)
				if err != nil {
					return fmt.Errorf("column %s: %w", f.Name, err)
				}
				cells[i] = v
			}
			rows = append(rows, cells)
		}
		if page.PageToken == "" || len(page.Rows) == 0 {
			break
		}
		token = page.PageToken
	}
	return printRows(env, af, sch, rows, *maxWidth)
}

// kvPair and orderedObject are a JSON object whose members keep schema
// order.
type kvPair struct {
	k string
	v any
}

type orderedObject []kvPair

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// headValue turns a tabledata.list cell into what head prints: nil for
// NULL, a string for a scalar (TIMESTAMP in UTC as
// "2006-01-02 15:04:05.999999 UTC"), an orderedObject for a RECORD or
// RANGE, []any for a REPEATED field.
func headValue(f *schema.Field, raw json.RawMessage, elem bool) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if f.Mode == schema.Repeated && !elem {
			return []any{}, nil
		}
		return nil, nil
	}
	if f.Mode == schema.Repeated && !elem {
		var cells []struct {
			V json.RawMessage `json:"v"`
		}
		if err := json.Unmarshal(raw, &cells); err != nil {
			return nil, err
		}
		out := make([]any, len(cells))
		for i, c := range cells {
			v, err := headValue(f, c.V, true)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	if f.Type == schema.Record || f.Type == schema.Range {
		var rec struct {
			F []struct {
				V json.RawMessage `json:"v"`
			} `json:"f"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, err
		}
		sub := f.Fields
		if f.Type == schema.Range {
			et := schema.Type("")
			if f.RangeElementType != nil {
				et = f.RangeElementType.Type
			}
			sub = []*schema.Field{{Name: "start", Type: et}, {Name: "end", Type: et}}
		}
		if len(rec.F) != len(sub) {
			return nil, fmt.Errorf("%s: record of %d cells, want %d", f.Name, len(rec.F), len(sub))
		}
		var out orderedObject
		for i, sf := range sub {
			v, err := headValue(sf, rec.F[i].V, false)
			if err != nil {
				return nil, err
			}
			out = append(out, kvPair{sf.Name, v})
		}
		return out, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: cell %s is not a string", f.Name, raw)
	}
	if f.Type == schema.Timestamp {
		if us, err := strconv.ParseInt(s, 10, 64); err == nil {
			return timestampText(us), nil
		}
	}
	return s, nil
}

// timestampText is a TIMESTAMP as head, CSV and NDJSON print it (the form
// of BigQuery's exports): 2006-01-02 15:04:05[.ffffff] UTC.
func timestampText(us int64) string { return string(appendTimestampText(nil, us)) }

func appendTimestampText(dst []byte, us int64) []byte {
	dst = time.UnixMicro(us).UTC().AppendFormat(dst, "2006-01-02 15:04:05.999999")
	return append(dst, " UTC"...)
}

// cellText renders a head cell on one line: NULL, a scalar as is, nested
// values as compact JSON.
func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// printBox prints rows as bq head does:
//
//	+----+-------+
//	| id | name  |
//	+----+-------+
//	|  1 | alpha |
//	+----+-------+
//
// Numbers are right-aligned, everything else left-aligned.
//
// Cells wider than maxWidth runes are cut (0: never).
func printBox(w io.Writer, sch *schema.Schema, rows [][]any, maxWidth int) error {
	width := make([]int, len(sch.Fields))
	text := make([][]string, len(rows))
	for i, f := range sch.Fields {
		width[i] = utf8.RuneCountInString(f.Name)
	}
	for r, cells := range rows {
		text[r] = make([]string, len(cells))
		for i, c := range cells {
			text[r][i] = truncateCell(cellText(c), maxWidth)
			width[i] = max(width[i], utf8.RuneCountInString(text[r][i]))
		}
	}
	bw := bufio.NewWriter(w)
	rule := func() {
		bw.WriteByte('+')
		for _, n := range width {
			bw.WriteString(strings.Repeat("-", n+2))
			bw.WriteByte('+')
		}
		bw.WriteByte('\n')
	}
	line := func(cells []string, right func(i int) bool) {
		bw.WriteByte('|')
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			bw.WriteByte(' ')
			if right(i) {
				bw.WriteString(pad + c)
			} else {
				bw.WriteString(c + pad)
			}
			bw.WriteString(" |")
		}
		bw.WriteByte('\n')
	}
	names := make([]string, len(sch.Fields))
	numeric := make([]bool, len(sch.Fields))
	for i, f := range sch.Fields {
		names[i] = f.Name
		switch f.Type {
		case schema.Integer, schema.Float, schema.Numeric, schema.BigNumeric:
			numeric[i] = f.Mode != schema.Repeated
		}
	}
	rule()
	line(names, func(int) bool { return false })
	rule()
	for r := range text {
		line(text[r], func(i int) bool { return numeric[i] && rows[r][i] != nil })
	}
	if len(rows) > 0 {
		rule()
	}
	return bw.Flush()
}

// ---- extract ----

// extractFormats are the output formats of extract.
var extractFormats = map[string]bool{"parquet": true, "arrow": true, "csv": true, "ndjson": true}

func runExtract(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "extract", "[flags] [project:]dataset.table OUT|-\n\n"+
		"Reads the table through the Storage Read API with --streams streams in parallel;\n"+
		"rows from different streams interleave, so the output is in no particular order.")
	g := addGRPCFlags(env, fs)
	format := fs.String("format", "", "output format: parquet, arrow (Arrow IPC file), csv or ndjson (default: from OUT's extension)")
	where := fs.String("where", "", "row_restriction: a SQL predicate the rows must satisfy")
	cols := fs.String("columns", "", "comma-separated columns to extract (nested fields as rec.field); default all")
	streams := fs.Int("streams", 4, "read streams to read in parallel")
	stats := fs.Bool("stats", false, "print rows, bytes and throughput to stderr at the end")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want a table reference and an output file, got %d arguments", len(pos))
	}
	plaintext, err := g.resolve()
	if err != nil {
		return err
	}
	r, err := parseRef(pos[0], g.project)
	if err != nil {
		return err
	}
	if r.table == "" {
		return usagef("%q is not a table reference", pos[0])
	}
	out := pos[1]
	if *format == "" {
		*format = strings.TrimPrefix(strings.ToLower(filepath.Ext(out)), ".")
		switch *format {
		case "json", "jsonl":
			*format = "ndjson"
		case "ipc", "feather":
			*format = "arrow"
		}
	}
	if !extractFormats[*format] {
		return usagef("--format: want parquet, arrow, csv or ndjson, got %q", *format)
	}
	if *streams < 1 || *streams > 1000 {
		return usagef("--streams: want 1..1000, got %d", *streams)
	}
	var selected []string
	if *cols != "" {
		for _, c := range strings.Split(*cols, ",") {
			selected = append(selected, strings.TrimSpace(c))
		}
	}
	if err := checkEndpoint(ctx, g.endpoint, plaintext); err != nil {
		return err
	}
	x := &extractor{env: env, format: *format, streams: *streams, progress: isTerminalWriter(env.Stderr)}
	res, err := x.run(ctx, g.endpoint, plaintext, r, selected, *where, out)
	if err != nil {
		return err
	}
	if *stats || x.progress {
		secs := max(res.elapsed.Seconds(), 1e-9)
		fmt.Fprintf(env.Stderr, "extracted %d rows (%.1f MB of Arrow) from %d streams in %.2fs: %.0f rows/s, %.1f MB/s\n",
			res.rows, float64(res.bytes)/1e6, res.streams, secs, float64(res.rows)/secs, float64(res.bytes)/1e6/secs)
	}
	return nil
}

// isTerminalWriter reports whether w is a terminal (progress goes there
// only then).
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

type extractor struct {
	env      *Env
	format   string
	streams  int
	progress bool

	rows, bytes atomic.Int64
}

type extractResult struct {
	rows, bytes int64
	streams     int
	elapsed     time.Duration
}

// sink writes one output format. encode runs on the stream goroutines
// (in parallel) and turns a record into a chunk; write runs on one
// goroutine, in arrival order.
type sink interface {
	encode(rec arrow.Record) (any, error)
	write(chunk any) error
	close() error
}

func (x *extractor) run(ctx context.Context, endpoint string, plaintext bool, r ref, selected []string, where, out string) (*extractResult, error) {
	start := time.Now()
	rc, err := storage.NewBigQueryReadClient(ctx, clientOptions(endpoint, plaintext)...)
	if err != nil {
		return nil, credentialsHint(fmt.Errorf("read client: %w", err), endpoint)
	}
	defer rc.Close()
	sess, err := rc.CreateReadSession(ctx, &storagepb.CreateReadSessionRequest{
		Parent: "projects/" + r.project,
		ReadSession: &storagepb.ReadSession{
			Table:       fmt.Sprintf("projects/%s/datasets/%s/tables/%s", r.project, r.dataset, r.table),
			DataFormat:  storagepb.DataFormat_ARROW,
			ReadOptions: &storagepb.ReadSession_TableReadOptions{SelectedFields: selected, RowRestriction: where},
		},
		MaxStreamCount:          int32(x.streams),
		PreferredMinStreamCount: int32(x.streams),
	})
	if err != nil {
		return nil, rpcError("create read session", endpoint, err)
	}
	schemaMsg := sess.GetArrowSchema().GetSerializedSchema()
	sr, err := ipc.NewReader(bytes.NewReader(schemaMsg))
	if err != nil {
		return nil, fmt.Errorf("session schema: %w", err)
	}
	asch := sr.Schema()
	sr.Release()

	// Write to OUT.partial and rename at the end, so that a failed
	// extract leaves no truncated OUT behind.
	var w io.Writer
	var f *os.File
	tmp := out + ".partial"
	if out == "-" {
		w = x.env.Stdout
	} else {
		f, err = os.Create(tmp)
		if err != nil {
			return nil, err
		}
		defer func() {
			if f != nil {
				f.Close()
				os.Remove(tmp)
			}
		}()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	s, err := newSink(x.format, asch, bw)
	if err != nil {
		return nil, err
	}

	stopProgress := x.startProgress(sess.GetEstimatedRowCount())
	chunks := make(chan any, 2*len(sess.GetStreams())+1)
	g, gctx := errgroup.WithContext(ctx)
	var readers sync.WaitGroup
	for _, st := range sess.GetStreams() {
		readers.Add(1)
		g.Go(func() error {
			defer readers.Done()
			return x.readStream(gctx, rc, schemaMsg, st.GetName(), s, chunks)
		})
	}
	go func() { readers.Wait(); close(chunks) }()
	g.Go(func() error {
		for c := range chunks {
			if err := s.write(c); err != nil {
				// Drain so that the readers finish.
				for c := range chunks {
					if rec, ok := c.(arrow.Record); ok {
						rec.Release()
					}
				}
				return err
			}
		}
		return nil
	})
	err = g.Wait()
	stopProgress()
	if err != nil {
		return nil, err
	}
	if err := s.close(); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return nil, err
		}
		f = nil
		if err := os.Rename(tmp, out); err != nil {
			os.Remove(tmp)
			return nil, err
		}
	}
	return &extractResult{rows: x.rows.Load(), bytes: x.bytes.Load(), streams: len(sess.GetStreams()), elapsed: time.Since(start)}, nil
}

// maxReadRetries is how many times in a row a stream is resumed after a
// broken connection before extract gives up.
const maxReadRetries = 5

// readStream reads one stream and sends its encoded chunks. A broken
// connection (UNAVAILABLE, INTERNAL) resumes at the offset reached: no
// duplicate, no gap.
func (x *extractor) readStream(ctx context.Context, rc *storage.BigQueryReadClient, schemaMsg []byte, name string, s sink, out chan<- any) error {
	var offset int64
	retries := 0
	for {
		rows, err := rc.ReadRows(ctx, &storagepb.ReadRowsRequest{ReadStream: name, Offset: offset})
		if err != nil {
			return rpcError("read rows", name, err)
		}
		for {
			resp, err := rows.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				if c := status.Code(err); (c == codes.Unavailable || c == codes.Internal) && retries < maxReadRetries {
					retries++
					break
				}
				return rpcError("read rows", name, err)
			}
			retries = 0
			batch := resp.GetArrowRecordBatch().GetSerializedRecordBatch()
			buf := make([]byte, 0, len(schemaMsg)+len(batch))
			buf = append(append(buf, schemaMsg...), batch...)
			rd, err := ipc.NewReader(bytes.NewReader(buf))
			if err != nil {
				return fmt.Errorf("stream %s: Arrow batch: %w", name, err)
			}
			for rd.Next() {
				rec := rd.RecordBatch()
				chunk, err := s.encode(rec)
				if err != nil {
					rd.Release()
					return err
				}
				select {
				case out <- chunk:
				case <-ctx.Done():
					rd.Release()
					return ctx.Err()
				}
			}
			err = rd.Err()
			rd.Release()
			if err != nil {
				return fmt.Errorf("stream %s: Arrow batch: %w", name, err)
			}
			offset += resp.GetRowCount()
			x.rows.Add(resp.GetRowCount())
			x.bytes.Add(int64(len(batch)))
		}
	}
}

func rpcError(what, target string, err error) error {
	if st, ok := status.FromError(err); ok {
		if st.Code() == codes.Unavailable {
			return fmt.Errorf("%s: cannot reach bqstore at %s (is bqstore serve running? set --endpoint or BQSTORE_ENDPOINT): %s", what, target, st.Message())
		}
		return fmt.Errorf("%s: %s: %s", what, st.Code(), st.Message())
	}
	return fmt.Errorf("%s: %w", what, err)
}

// startProgress draws a progress line on stderr while the extract runs
// (only on a terminal); the returned function erases it.
func (x *extractor) startProgress(estimated int64) func() {
	if !x.progress {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(x.env.Stderr, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprint(x.env.Stderr, "\r\033[K"+extractProgressLine(x.rows.Load(), estimated, x.bytes.Load(), time.Since(start)))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// extractProgressLine is "[#####.....]  42%  420000/1000000 rows  12.3 MB  1.2M rows/s".
func extractProgressLine(rows, estimated, bytes int64, elapsed time.Duration) string {
	const barWidth = 30
	frac := 0.0
	if estimated > 0 {
		frac = min(1, float64(rows)/float64(estimated))
	}
	filled := int(math.Round(frac * barWidth))
	rate := float64(rows) / max(elapsed.Seconds(), 1e-9)
	return fmt.Sprintf("[%s%s] %3.0f%%  %d/%d rows  %.1f MB  %.0f rows/s",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), frac*100, rows, estimated, float64(bytes)/1e6, rate)
}

func newSink(format string, s *arrow.Schema, w io.Writer) (sink, error) {
	switch format {
	case "arrow":
		fw, err := ipc.NewFileWriter(w, ipc.WithSchema(s))
		if err != nil {
			return nil, err
		}
		return &recordSink{writeFn: fw.Write, closeFn: fw.Close}, nil
	case "parquet":
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
		pw, err := pqarrow.NewFileWriter(s, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, fmt.Errorf("parquet: %w", err)
		}
		return &recordSink{writeFn: pw.WriteBuffered, closeFn: pw.Close}, nil
	case "csv":
		bq, err := schema.FromArrow(s)
		if err != nil {
			return nil, err
		}
		for _, f := range bq.Fields {
			if f.Mode == schema.Repeated || f.Type == schema.Record || f.Type == schema.Range {
				return nil, usagef("CSV cannot hold the nested or repeated column %s (use --format ndjson, parquet or arrow, or --columns)", f.Name)
			}
		}
		hdr := make([]byte, 0, 64)
		for i, f := range bq.Fields {
			if i > 0 {
				hdr = append(hdr, ',')
			}
			hdr = appendCSV(hdr, []byte(f.Name))
		}
		if _, err := w.Write(append(hdr, '\n')); err != nil {
			return nil, err
		}
		return &textSink{w: w, row: func(dst []byte, rec arrow.Record, i int, tmp *[]byte) []byte {
			return appendCSVRow(dst, bq, rec, i, tmp)
		}}, nil
	case "ndjson":
		bq, err := schema.FromArrow(s)
		if err != nil {
			return nil, err
		}
		return &textSink{w: w, row: func(dst []byte, rec arrow.Record, i int, tmp *[]byte) []byte {
			return appendJSONRow(dst, bq, rec, i, tmp)
		}}, nil
	}
	return nil, usagef("unknown format %q", format)
}

// recordSink passes records through to an Arrow or Parquet writer.
type recordSink struct {
	writeFn func(arrow.Record) error
	closeFn func() error
}

func (s *recordSink) encode(rec arrow.Record) (any, error) {
	rec.Retain()
	return rec, nil
}

func (s *recordSink) write(c any) error {
	rec := c.(arrow.Record)
	defer rec.Release()
	return s.writeFn(rec)
}

func (s *recordSink) close() error { return s.closeFn() }

// textSink formats rows into bytes on the stream goroutines.
type textSink struct {
	w   io.Writer
	row func(dst []byte, rec arrow.Record, i int, tmp *[]byte) []byte
}

func (s *textSink) encode(rec arrow.Record) (any, error) {
	b := make([]byte, 0, arrowencSize(rec)+int(rec.NumRows())*int(rec.NumCols())*4)
	var tmp []byte
	for i := 0; i < int(rec.NumRows()); i++ {
		b = s.row(b, rec, i, &tmp)
		b = append(b, '\n')
	}
	return b, nil
}

// arrowencSize estimates the bytes of a record's buffers (an output size
// hint).
func arrowencSize(rec arrow.Record) int {
	n := 0
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += b.Len()
			}
		}
	}
	return n
}

func (s *textSink) write(c any) error {
	_, err := s.w.Write(c.([]byte))
	return err
}

func (s *textSink) close() error { return nil }

// ---- cells ----

// appendCSV appends a CSV field, quoted when it holds a comma, a quote,
// a line break or edge spaces (RFC 4180).
func appendCSV(dst, v []byte) []byte {
	quote := len(v) > 0 && (v[0] == ' ' || v[len(v)-1] == ' ')
	for _, c := range v {
		if c == ',' || c == '"' || c == '\n' || c == '\r' {
			quote = true
			break
		}
	}
	if !quote {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	for _, c := range v {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// appendCSVRow writes row i as BigQuery's CSV export does: NULL as an
// empty field, values in their text form, quoted when needed.
func appendCSVRow(dst []byte, bq *schema.Schema, rec arrow.Record, i int, tmp *[]byte) []byte {
	for k, f := range bq.Fields {
		if k > 0 {
			dst = append(dst, ',')
		}
		col := rec.Column(k)
		if col.IsNull(i) {
			continue
		}
		if a, ok := col.(*array.String); ok {
			dst = appendCSV(dst, unsafeBytes(a.Value(i)))
			continue
		}
		*tmp = appendScalarText((*tmp)[:0], f, col, i)
		dst = appendCSV(dst, *tmp)
	}
	return dst
}

// unsafeBytes views s as bytes without copying; the bytes must not be
// modified.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// appendScalarText appends the text form of a scalar cell.
func appendScalarText(dst []byte, f *schema.Field, arr arrow.Array, i int) []byte {
	switch a := arr.(type) {
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Float64:
		return rowjson.AppendFloat(dst, a.Value(i))
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.String:
		return append(dst, a.Value(i)...)
	case *array.Binary:
		return base64.StdEncoding.AppendEncode(dst, a.Value(i))
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return rowjson.AppendDecimal(dst, a.Value(i).BigInt(), int(dt.Scale))
	case *array.Decimal256:
		dt := a.DataType().(*arrow.Decimal256Type)
		return rowjson.AppendDecimal(dst, a.Value(i).BigInt(), int(dt.Scale))
	case *array.Timestamp:
		if f.Type == schema.DateTime {
			return rowjson.AppendDatetime(dst, int64(a.Value(i)))
		}
		return appendTimestampText(dst, int64(a.Value(i)))
	case *array.Date32:
		return rowjson.AppendDate(dst, int32(a.Value(i)))
	case *array.Time64:
		return rowjson.AppendTime(dst, int64(a.Value(i)))
	case *array.MonthDayNanoInterval:
		return rowjson.AppendInterval(dst, a.Value(i))
	}
	return fmt.Appendf(dst, "%v", arr.ValueStr(i))
}

// appendJSONRow writes row i as one JSON object, as BigQuery's
// NEWLINE_DELIMITED_JSON export does: INT64 as strings (64-bit exact),
// FLOAT64 and BOOL as JSON numbers and booleans, JSON columns as embedded
// JSON, every other scalar as its text form, RECORD as an object and
// REPEATED as an array; NULL columns are omitted.
func appendJSONRow(dst []byte, bq *schema.Schema, rec arrow.Record, i int, tmp *[]byte) []byte {
	dst = append(dst, '{')
	first := true
	for k, f := range bq.Fields {
		col := rec.Column(k)
		if col.IsNull(i) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, unsafeBytes(f.Name))
		dst = append(dst, ':')
		dst = appendJSONValue(dst, f, col, i, false, tmp)
	}
	return append(dst, '}')
}

func appendJSONValue(dst []byte, f *schema.Field, arr arrow.Array, i int, elem bool, tmp *[]byte) []byte {
	if arr.IsNull(i) {
		return append(dst, "null"...)
	}
	if f.Mode == schema.Repeated && !elem {
		l := arr.(*array.List)
		lo, hi := l.ValueOffsets(i)
		dst = append(dst, '[')
		for j := lo; j < hi; j++ {
			if j > lo {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, f, l.ListValues(), int(j), true, tmp)
		}
		return append(dst, ']')
	}
	switch a := arr.(type) {
	case *array.Struct:
		sub := f.Fields
		if f.Type == schema.Range {
			et := schema.Type("")
			if f.RangeElementType != nil {
				et = f.RangeElementType.Type
			}
			sub = []*schema.Field{{Name: "start", Type: et}, {Name: "end", Type: et}}
		}
		dst = append(dst, '{')
		for k, sf := range sub {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, unsafeBytes(sf.Name))
			dst = append(dst, ':')
			dst = appendJSONValue(dst, sf, a.Field(k), i, false, tmp)
		}
		return append(dst, '}')
	case *array.Int64:
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, a.Value(i), 10)
		return append(dst, '"')
	case *array.Float64:
		v := a.Value(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			dst = append(dst, '"')
			dst = rowjson.AppendFloat(dst, v)
			return append(dst, '"')
		}
		return strconv.AppendFloat(dst, v, 'g', -1, 64)
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.String:
		if f.Type == schema.JSON && json.Valid(unsafeBytes(a.Value(i))) {
			return append(dst, a.Value(i)...)
		}
		return appendJSONString(dst, unsafeBytes(a.Value(i)))
	}
	*tmp = appendScalarText((*tmp)[:0], f, arr, i)
	return appendJSONString(dst, *tmp)
}

// appendJSONString appends s as a JSON string (rowjson's escaping, shared
// with the REST rows).
func appendJSONString(dst []byte, s []byte) []byte {
	return rowjson.AppendJSONString(dst, unsafe.String(unsafe.SliceData(s), len(s)))
}
