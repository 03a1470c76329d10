package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery"
	storage "cloud.google.com/go/bigquery/storage/apiv1"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/hamba/avro/v2"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"
)

// ReadConfig is the read workload.
type ReadConfig struct {
	Target
	Streams int    // max_stream_count asked for (0: the server chooses)
	Format  string // arrow or avro
	Columns []string
	Where   string
}

// readVisitor receives every decoded Arrow record (Arrow sessions) or
// row (Avro sessions). It must be safe for concurrent use.
type readVisitor struct {
	record func(arrow.Record)
	row    func(map[string]any)
}

type readTotals struct {
	rows, bytes atomic.Int64
	streams     int
}

// readTable reads the whole table through the Read API with up to
// maxStreams streams in parallel, decoding everything as a client would.
func readTable(ctx context.Context, t Target, cfg ReadConfig, v readVisitor) (*readTotals, error) {
	rc, err := storage.NewBigQueryReadClient(ctx, t.grpcOptions()...)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	format := storagepb.DataFormat_ARROW
	switch strings.ToLower(cfg.Format) {
	case "", "arrow":
	case "avro":
		format = storagepb.DataFormat_AVRO
	default:
		return nil, fmt.Errorf("--format: unknown format %q (arrow, avro)", cfg.Format)
	}
	sess, err := rc.CreateReadSession(ctx, &storagepb.CreateReadSessionRequest{
		Parent: "projects/" + t.Project,
		ReadSession: &storagepb.ReadSession{
			Table:      t.tablePath(),
			DataFormat: format,
			ReadOptions: &storagepb.ReadSession_TableReadOptions{
				SelectedFields: cfg.Columns,
				RowRestriction: cfg.Where,
			},
		},
		MaxStreamCount: int32(cfg.Streams),
	})
	if err != nil {
		return nil, fmt.Errorf("create read session: %w", err)
	}
	tot := &readTotals{streams: len(sess.GetStreams())}
	var avroSchema avro.Schema
	if format == storagepb.DataFormat_AVRO {
		avroSchema, err = avro.Parse(sess.GetAvroSchema().GetSchema())
		if err != nil {
			return nil, fmt.Errorf("avro schema from the server: %w", err)
		}
	}
	arrowSchema := sess.GetArrowSchema().GetSerializedSchema()
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range sess.GetStreams() {
		g.Go(func() error {
			var offset int64
			var buf bytes.Buffer
			for retries := 0; ; {
				rows, err := rc.ReadRows(gctx, &storagepb.ReadRowsRequest{ReadStream: s.GetName(), Offset: offset})
				if err != nil {
					return err
				}
				for {
					resp, err := rows.Recv()
					if errors.Is(err, io.EOF) {
						return nil
					}
					if err != nil {
						// Resume from the offset reached, as the
						// official clients do.
						if retries < 3 {
							retries++
							break
						}
						return fmt.Errorf("read stream %s: %w", s.GetName(), err)
					}
					n := resp.GetRowCount()
					switch format {
					case storagepb.DataFormat_ARROW:
						b := resp.GetArrowRecordBatch().GetSerializedRecordBatch()
						tot.bytes.Add(int64(len(b)))
						buf.Reset()
						buf.Write(arrowSchema)
						buf.Write(b)
						r, err := ipc.NewReader(&buf)
						if err != nil {
							return fmt.Errorf("arrow: %w", err)
						}
						var got int64
						for r.Next() {
							rec := r.RecordBatch()
							got += rec.NumRows()
							if v.record != nil {
								v.record(rec)
							}
						}
						if err := r.Err(); err != nil {
							return fmt.Errorf("arrow: %w", err)
						}
						r.Release()
						if got != n {
							return fmt.Errorf("stream %s: row_count %d but the batch holds %d rows", s.GetName(), n, got)
						}
					case storagepb.DataFormat_AVRO:
						b := resp.GetAvroRows().GetSerializedBinaryRows()
						tot.bytes.Add(int64(len(b)))
						dec := avro.NewDecoderForSchema(avroSchema, bytes.NewReader(b))
						for i := int64(0); i < n; i++ {
							var row map[string]any
							if err := dec.Decode(&row); err != nil {
								return fmt.Errorf("avro row %d: %w", i, err)
							}
							if v.row != nil {
								v.row(row)
							}
						}
					}
					offset += n
					tot.rows.Add(n)
				}
			}
		})
	}
	return tot, g.Wait()
}

// idSums are the count, sum and sum of squares of a table's ids, in
// wrapping int64 arithmetic (the closed forms overflow past ~1.6M rows).
type idSums struct{ count, sum, sq int64 }

// readIDSums reads the table's ids through the Read API (zero sums for a
// table that does not exist yet is not its job: the table must exist).
func readIDSums(ctx context.Context, t Target) (idSums, error) {
	var count, sum, sumSq atomic.Int64
	_, err := readTable(ctx, t, ReadConfig{Columns: []string{"id"}}, readVisitor{record: func(rec arrow.Record) {
		col, ok := rec.Column(0).(*array.Int64)
		if !ok {
			return
		}
		var s, sq int64
		for _, v := range col.Int64Values() {
			s += v
			sq += v * v
		}
		count.Add(int64(col.Len()))
		sum.Add(s)
		sumSq.Add(sq)
	}})
	return idSums{count.Load(), sum.Load(), sumSq.Load()}, err
}

// verifyIDs checks through the Read API that the run added exactly the
// ids 0..n-1, each once, to what the table held before it (base: the
// sums of an existing table read before the run, zero for a new one).
func verifyIDs(ctx context.Context, t Target, base idSums, n int64) error {
	got, err := readIDSums(ctx, t)
	if err != nil {
		return err
	}
	got = idSums{got.count - base.count, got.sum - base.sum, got.sq - base.sq}
	var want idSums
	want.count = n
	for i := int64(0); i < n; i++ {
		want.sum += i
		want.sq += i * i
	}
	if got != want {
		before := ""
		if base.count > 0 {
			before = fmt.Sprintf(" besides the %d it held before the run", base.count)
		}
		return fmt.Errorf("the run added %d rows (id sum %d, squares %d)%s, want %d rows with ids 0..%d (sum %d, squares %d)",
			got.count, got.sum, got.sq, before, n, n-1, want.sum, want.sq)
	}
	return nil
}

// Read runs the read workload.
func Read(ctx context.Context, cfg ReadConfig) (*Result, error) {
	if cfg.Table == "" {
		t, err := latestTable(ctx, cfg.Target)
		if err != nil {
			return nil, err
		}
		cfg.Table = t
	}
	res := &Result{Workload: "read", Format: strings.ToLower(cmpOr(cfg.Format, "arrow")), Table: cfg.tablePath()}
	cpu0 := selfCPU()
	var srv0 procSample
	if cfg.ServerPID > 0 {
		srv0 = sampleProc(cfg.ServerPID)
	}
	start := time.Now()
	tot, err := readTable(ctx, cfg.Target, cfg, readVisitor{})
	if err != nil {
		return nil, err
	}
	res.Streams = tot.streams
	res.Rows = tot.rows.Load()
	res.Bytes = tot.bytes.Load()
	res.finish(start, cpu0, srv0, cfg.ServerPID)
	res.Verified = true
	return res, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// latestTable is the most recently created table of the target dataset
// (what the last `bench write` made), for `bench read` without --table.
func latestTable(ctx context.Context, t Target) (string, error) {
	bq, err := bigquery.NewClient(ctx, t.Project, t.restOptions()...)
	if err != nil {
		return "", err
	}
	defer bq.Close()
	it := bq.Dataset(t.Dataset).Tables(ctx)
	var best string
	var bestTime time.Time
	for {
		tbl, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("list tables of %s: %w", t.Dataset, err)
		}
		md, err := tbl.Metadata(ctx)
		if err != nil {
			return "", err
		}
		if best == "" || md.CreationTime.After(bestTime) {
			best, bestTime = tbl.TableID, md.CreationTime
		}
	}
	if best == "" {
		return "", fmt.Errorf("dataset %s has no table: run bench write first, or name one with --table", t.Dataset)
	}
	return best, nil
}
