package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/bqstore/bqstore/ingest/rows"
)

// Dead letters as a BigQuery table (Config.DeadLetterTable).
//
// A batch's dead letters are appended to a PENDING stream of the
// dead-letter table and finalized before the batch's seal; the seal names
// that stream (SealedStream.Table 1) next to the data stream, so the same
// decision covers both: an unsealed dead-letter stream is never committed
// (its range is replayed and its dead letters written again into a new
// stream), a sealed one is committed by whoever resolves the seal,
// idempotently (STREAM_ALREADY_COMMITTED, commit_time). BatchCommit is per
// parent table, so a seal naming both tables takes two commits; a crash
// between them leaves the seal, and its recovery commits what is left.
//
// The table's columns (extra NULLABLE columns are allowed):
//
//	source    STRING     "kafka:TOPIC", or the file partition's key
//	partition INTEGER    the Kafka partition (0 for files)
//	offset    INTEGER    the record's offset (files: byte offset of its line)
//	key       BYTES      the Kafka record key (NULL for files)
//	raw       BYTES      the record as read (cut to maxDeadLetterRaw bytes)
//	error     STRING     why it is a dead letter
//	time      TIMESTAMP  when this run found it a dead letter

// DeadLetterColumns are the columns a dead-letter table needs, with their
// BigQuery types, in the order of the doc above.
var DeadLetterColumns = []struct{ Name, Type string }{
	{"source", "STRING"}, {"partition", "INTEGER"}, {"offset", "INTEGER"}, {"key", "BYTES"},
	{"raw", "BYTES"}, {"error", "STRING"}, {"time", "TIMESTAMP"},
}

// maxDeadLetterRaw bounds the raw bytes kept of one record: a record too
// big for the data table is too big for the dead-letter table too.
const maxDeadLetterRaw = 1 << 20

// keyReader is a RecordReader whose records have keys (Kafka).
type keyReader interface {
	// Key returns the key of the record Next returned last.
	Key() []byte
}

// deadLetter copies the record just read (at offset at) as a dead letter.
func (w *worker) deadLetter(at int64, rec []byte, reason string) pendingDeadLetter {
	d := pendingDeadLetter{offset: at, rec: append([]byte(nil), rec...), reason: reason}
	if kr, ok := w.reader.(keyReader); ok {
		if k := kr.Key(); k != nil {
			d.key = append([]byte{}, k...)
		}
	}
	w.position(&d)
	return d
}

// dlMapper returns the mapper for dead-letter rows of a stream's schema.
func (p *pipeline) dlMapper(schema *storagepb.TableSchema) (*rows.Mapper, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.dlMapper != nil && proto.Equal(p.mu.dlSchema, schema) {
		return p.mu.dlMapper, nil
	}
	have := map[string]bool{}
	for _, f := range schema.GetFields() {
		have[strings.ToLower(f.GetName())] = true
	}
	var missing []string
	for _, c := range DeadLetterColumns {
		if !have[c.Name] {
			missing = append(missing, c.Name+" "+c.Type)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ingest: dead-letter table %s lacks the columns %s", p.cfg.DeadLetterTable, strings.Join(missing, ", "))
	}
	m, err := rows.New(schema, rows.UnknownReject)
	if err != nil {
		return nil, fmt.Errorf("ingest: dead-letter table %s: %w", p.cfg.DeadLetterTable, err)
	}
	p.mu.dlSchema, p.mu.dlMapper = schema, m
	return m, nil
}

// splitKey returns the source and partition number of a partition key
// ("kafka:TOPIC/N"; any other key is its own source, partition 0).
func splitKey(key string) (string, int64) {
	if strings.HasPrefix(key, "kafka:") {
		if i := strings.LastIndexByte(key, '/'); i >= 0 {
			if n, err := strconv.ParseInt(key[i+1:], 10, 32); err == nil {
				return key[:i], n
			}
		}
	}
	return key, 0
}

// deadLetterRow is the JSON form of one dead-letter row, mapped with the
// table's schema like any record.
func deadLetterRow(key string, d pendingDeadLetter, now time.Time) ([]byte, error) {
	src, part := splitKey(key)
	raw, reason := d.rec, d.reason
	if len(raw) > maxDeadLetterRaw {
		reason = fmt.Sprintf("%s (raw cut to its first %d of %d bytes)", reason, maxDeadLetterRaw, len(raw))
		raw = raw[:maxDeadLetterRaw]
	}
	row := map[string]any{
		"source": src, "partition": part, "offset": d.offset,
		"raw": base64.StdEncoding.EncodeToString(raw), "error": reason,
		"time": now.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), // microseconds: TIMESTAMP precision
	}
	if d.key != nil {
		row["key"] = base64.StdEncoding.EncodeToString(d.key)
	}
	return json.Marshal(row)
}

// writeDeadLetterStream appends a batch's dead letters to a new PENDING
// stream of the dead-letter table and finalizes it, returning the stream
// name and its row count. A failed attempt throws its stream away (never
// sealed, never committed) and tries a new one, at most MaxReplays times.
func (w *worker) writeDeadLetterStream(ctx context.Context, dls []pendingDeadLetter) (string, int64, error) {
	p := w.p
	var last error
	for attempt := 0; attempt < p.cfg.MaxReplays; attempt++ {
		if attempt > 0 {
			if err := p.cfg.Backoff.Wait(ctx, attempt-1); err != nil {
				return "", 0, err
			}
		}
		name, n, final, err := w.tryDeadLetterStream(ctx, dls)
		if err == nil {
			return name, n, nil
		}
		if final || ctx.Err() != nil {
			return "", 0, err
		}
		last = err
		p.log.Warn("writing dead letters to their table failed, retrying with a new stream", "partition", w.key, "attempt", attempt, "err", err)
	}
	return "", 0, fmt.Errorf("ingest: partition %s: dead letters not written to %s after %d attempts: %w", w.key, p.cfg.DeadLetterTable, p.cfg.MaxReplays, last)
}

// tryDeadLetterStream is one attempt of writeDeadLetterStream; final
// means another attempt cannot do better (the table does not fit).
func (w *worker) tryDeadLetterStream(ctx context.Context, dls []pendingDeadLetter) (name string, n int64, final bool, err error) {
	p := w.p
	ws, err := p.createStreamOn(ctx, p.cfg.DeadLetterTable)
	if err != nil {
		return "", 0, isNotFound(err), err
	}
	kept := false
	defer func() {
		if !kept {
			p.metrics.ActiveStreams.Dec()
		}
	}()
	mapper, err := p.dlMapper(ws.GetTableSchema())
	if err != nil {
		return "", 0, true, err
	}
	app, err := newAppender(ctx, p, ws.GetName(), mapper.Descriptor())
	if err != nil {
		return "", 0, false, err
	}
	buf := make([]byte, 0, p.cfg.RequestBytes)
	var rowsOf [][]byte
	var reqBytes int64
	flush := func() error {
		if len(rowsOf) == 0 {
			return nil
		}
		err := app.send(ctx, buf, rowsOf)
		buf, rowsOf, reqBytes = make([]byte, 0, p.cfg.RequestBytes), nil, 0
		return err
	}
	now := time.Now()
	for _, d := range dls {
		rec, err := deadLetterRow(w.key, d, now)
		if err != nil {
			app.abort()
			return "", 0, true, err
		}
		at := len(buf)
		if buf, err = mapper.Append(buf, rec); err != nil {
			app.abort()
			return "", 0, true, fmt.Errorf("ingest: dead-letter table %s: %w", p.cfg.DeadLetterTable, err)
		}
		cost := int64(1 + protowire.SizeBytes(len(buf)-at))
		if len(rowsOf) > 0 && reqBytes+cost > int64(p.cfg.RequestBytes) {
			row := append([]byte(nil), buf[at:]...)
			buf = buf[:at]
			if err := flush(); err != nil {
				app.abort()
				return "", 0, false, err
			}
			buf = append(buf, row...)
			at = 0
		}
		rowsOf = append(rowsOf, buf[at:len(buf):len(buf)])
		reqBytes += cost
	}
	if err := flush(); err != nil {
		app.abort()
		return "", 0, false, err
	}
	if err := app.close(); err != nil {
		return "", 0, false, err
	}
	count, err := p.finalize(ctx, ws.GetName())
	if err != nil {
		return "", 0, false, err
	}
	if count >= 0 && count != int64(len(dls)) {
		return "", 0, false, fmt.Errorf("ingest: %s: row_count %d, appended %d", ws.GetName(), count, len(dls))
	}
	kept = true
	return ws.GetName(), int64(len(dls)), false, nil
}
