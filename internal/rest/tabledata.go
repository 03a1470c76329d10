package rest

// tabledata.list: GET .../projects/{p}/datasets/{d}/tables/{t}/data.
//
// A listing reads one storage snapshot. The first page pins the snapshot
// time; its page token carries that time and the next row's index, so
// every later page reads the same snapshot (paging stays consistent while
// writes go on, as long as the token is used within the time-travel
// window). Rows are in the engine's plan order: the order a single Read
// API stream returns them, which is log (append) order: rows of a PENDING
// stream appear where they were appended, not where they were committed.
// Compaction keeps that order, so a row index names the same row in
// every page of a listing.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/readapi/arrowenc"
	"github.com/bqstore/bqstore/internal/rowjson"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// Limits of one tabledata.list page. BigQuery returns at most maxResults
// rows and about 10 MB of JSON; without maxResults it picks the page size
// from the response size alone.
const (
	tableDataMaxPageBytes = 10 << 20
	tableDataMaxRows      = 100000
)

// listTableData serves tabledata.list over Options.DB.
func (h *Handler) listTableData(w http.ResponseWriter, r *http.Request) {
	body, err := h.tableDataPage(r, h.opts.DB)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// tableDataListDoc is the shape of a tabledata.list response, which
// rowjson.AppendPage writes, for the discovery document; a test checks
// the responses against it.
type tableDataListDoc struct {
	Kind      string `json:"kind"`
	ETag      string `json:"etag"`
	TotalRows string `json:"totalRows" format:"int64"`
	PageToken string `json:"pageToken,omitempty"`
	Rows      []struct {
		F []struct {
			V any `json:"v"`
		} `json:"f"`
	} `json:"rows,omitempty"`
}

// tableDataQuery is a parsed tabledata.list request.
type tableDataQuery struct {
	maxRows  int64     // rows on this page at most
	start    int64     // index of the first row
	at       time.Time // snapshot time (zero: now)
	selected []string
	int64TS  bool
}

func parseTableDataQuery(r *http.Request) (tableDataQuery, error) {
	q := r.URL.Query()
	out := tableDataQuery{maxRows: tableDataMaxRows}
	if s := q.Get("maxResults"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return out, invalid("Invalid value for maxResults: %q is not a non-negative integer", s)
		}
		if v > 0 {
			out.maxRows = min(int64(v), tableDataMaxRows)
		}
	}
	if s := q.Get("startIndex"); s != "" {
		v, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			return out, invalid("Invalid value for startIndex: %q is not a non-negative integer", s)
		}
		out.start = int64(v)
	}
	if tok := q.Get("pageToken"); tok != "" {
		at, next, err := decodeDataToken(tok)
		if err != nil {
			return out, invalid("Invalid page token %q", tok)
		}
		// The token wins over startIndex, as the clients send one or the
		// other.
		out.at, out.start = at, next
	}
	out.selected = selectedFields(r)
	if s := q.Get("formatOptions.useInt64Timestamp"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return out, invalid("Invalid value for formatOptions.useInt64Timestamp: %q", s)
		}
		out.int64TS = v
	}
	return out, nil
}

// Page tokens: base64url("v1:<snapshot µs>:<next row>").
func encodeDataToken(at time.Time, next int64) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "v1:%d:%d", at.UnixMicro(), next))
}

func decodeDataToken(tok string) (time.Time, int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, 0, err
	}
	parts := strings.Split(string(b), ":")
	if len(parts) != 3 || parts[0] != "v1" {
		return time.Time{}, 0, errors.New("rest: malformed page token")
	}
	us, err1 := strconv.ParseInt(parts[1], 10, 64)
	next, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || us <= 0 || next < 0 {
		return time.Time{}, 0, errors.New("rest: malformed page token")
	}
	return time.UnixMicro(us), next, nil
}

func (h *Handler) tableDataPage(r *http.Request, db *storage.DB) ([]byte, error) {
	p, d, t, err := tablePath(r)
	if err != nil {
		return nil, err
	}
	q, err := parseTableDataQuery(r)
	if err != nil {
		return nil, err
	}
	ct, err := h.cat.Table(p, d, t)
	if err != nil {
		return nil, err
	}
	if ct.View != nil {
		return nil, invalid("Cannot list a table of type VIEW.")
	}
	st, err := db.Table(ct.ID)
	if err != nil {
		if errors.Is(err, storage.ErrTableNotFound) {
			return nil, &Error{Code: http.StatusNotFound, Reason: "notFound", Msg: fmt.Sprintf("Not found: Table %s:%s.%s", p, d, t)}
		}
		return nil, err
	}
	snap, err := st.Snapshot(q.at)
	switch {
	case errors.Is(err, storage.ErrSnapshotTooOld), errors.Is(err, storage.ErrSnapshotInFuture):
		return nil, invalid("Invalid page token: the listing's snapshot is no longer readable (%s); start the listing again", q.at.UTC().Format(time.RFC3339Nano))
	case err != nil:
		return nil, err
	}
	defer snap.Release()

	// The BigQuery schema of the snapshot (a listing keeps the schema of
	// its first page even if a column is added meanwhile).
	var full *schema.Schema
	for _, sv := range ct.Schemas {
		if sv.Version == snap.SchemaVersion() {
			full = sv.Schema
		}
	}
	if full == nil {
		return nil, fmt.Errorf("rest: table %s has no schema version %d", ct.ID, snap.SchemaVersion())
	}
	out, err := rowjson.SelectFields(full, q.selected)
	if err != nil {
		return nil, invalid("Invalid value for selectedFields: %s", strings.TrimPrefix(err.Error(), "rowjson: "))
	}
	cols, readSchema := topColumns(full, snap.Schema(), out)
	proj, err := arrowenc.NewProjection(readSchema, q.selected)
	if err != nil {
		return nil, invalid("Invalid value for selectedFields: %v", err)
	}
	f := rowjson.NewFormatter(out, rowjson.Options{UseInt64Timestamp: q.int64TS})

	total := snap.NumRows()
	chunks := snap.Chunks()
	pos := q.start
	end := min(total, pos+q.maxRows)
	var rows []byte
	for pos < end && len(rows) < tableDataMaxPageBytes {
		ci := sort.Search(len(chunks), func(i int) bool { return chunks[i].RowEnd > pos })
		if ci == len(chunks) {
			break
		}
		c := chunks[ci]
		hi := min(end, c.RowEnd)
		rec, err := snap.ReadChunk(r.Context(), c, pos-c.RowStart, hi-c.RowStart, cols)
		if err != nil {
			return nil, err
		}
		prec, err := proj.Record(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		// Format row by row until the page is full.
		n := int(prec.NumRows())
		for i := 0; i < n && len(rows) < tableDataMaxPageBytes; {
			k := pageRunEnd(prec, i, n, len(rows), tableDataMaxPageBytes)
			if len(rows) > 0 {
				rows = append(rows, ',')
			}
			rows, err = f.AppendRows(rows, prec, i, k)
			if err != nil {
				prec.Release()
				return nil, err
			}
			pos += int64(k - i)
			i = k
		}
		prec.Release()
	}
	page := rowjson.Page{ETag: ct.ETag, TotalRows: total, Rows: rows}
	if pos < total {
		page.PageToken = encodeDataToken(snap.Time(), pos)
	}
	return append(rowjson.AppendPage(nil, page), '\n'), nil
}

// topColumns returns the snapshot columns holding the selected top-level
// fields, in table order, and their Arrow schema.
func topColumns(full *schema.Schema, snapSchema *arrow.Schema, selected *schema.Schema) ([]int, *arrow.Schema) {
	want := map[string]bool{}
	for _, f := range selected.Fields {
		want[strings.ToLower(f.Name)] = true
	}
	var cols []int
	var fields []arrow.Field
	for i, f := range full.Fields {
		if want[strings.ToLower(f.Name)] && i < snapSchema.NumFields() {
			cols = append(cols, i)
			fields = append(fields, snapSchema.Field(i))
		}
	}
	return cols, arrow.NewSchema(fields, nil)
}
