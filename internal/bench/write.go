package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// WriteConfig is the write workload.
type WriteConfig struct {
	Target
	Rows         int64
	RowBytes     int    // serialized size of one row (default 1200)
	RequestBytes int    // size of one AppendRows request (default ~1 MB)
	Streams      int    // concurrent write streams (default 1)
	Mode         string // default, committed, pending, buffered
	Verify       bool   // read the table back through the Read API afterwards
}

// benchSchema is the reference row of docs/PERFORMANCE.md: two int64s, two
// short strings, a double and a payload string that pads the row.
var benchSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "ts", Type: bigquery.TimestampFieldType},
	{Name: "key", Type: bigquery.StringFieldType},
	{Name: "cat", Type: bigquery.StringFieldType},
	{Name: "value", Type: bigquery.FloatFieldType},
	{Name: "payload", Type: bigquery.StringFieldType},
}

var categories = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}

// rowEncoder appends bench rows as proto2 messages of the descriptor that
// adapt derives from benchSchema (fields numbered in schema order).
type rowEncoder struct {
	payload []byte
	rowSize int
}

func newRowEncoder(rowBytes int) *rowEncoder {
	e := &rowEncoder{}
	base := len(e.encode(nil, 1<<40, 0))
	n := max(0, rowBytes-base-3)
	e.payload = []byte(strings.Repeat("x", n))
	for i := range e.payload {
		e.payload[i] = 'a' + byte(i%26)
	}
	e.rowSize = len(e.encode(nil, 1<<40, 0))
	return e
}

func (e *rowEncoder) encode(dst []byte, id int64, ts int64) []byte {
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(id))
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(ts))
	dst = protowire.AppendTag(dst, 3, protowire.BytesType)
	dst = protowire.AppendString(dst, fmt.Sprintf("key-%032d", id))
	dst = protowire.AppendTag(dst, 4, protowire.BytesType)
	dst = protowire.AppendString(dst, categories[id%int64(len(categories))])
	dst = protowire.AppendTag(dst, 5, protowire.Fixed64Type)
	dst = protowire.AppendFixed64(dst, uint64(id)*0x9e3779b97f4a7c15>>11)
	dst = protowire.AppendTag(dst, 6, protowire.BytesType)
	dst = protowire.AppendBytes(dst, e.payload)
	return dst
}

func benchDescriptor() (*descriptorpb.DescriptorProto, error) {
	ts, err := adapt.BQSchemaToStorageTableSchema(benchSchema)
	if err != nil {
		return nil, err
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(ts, "root")
	if err != nil {
		return nil, err
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("adapt returned %T, not a message descriptor", d)
	}
	return adapt.NormalizeDescriptor(md)
}

func streamType(mode string) (managedwriter.StreamType, error) {
	switch mode {
	case "default", "":
		return managedwriter.DefaultStream, nil
	case "committed":
		return managedwriter.CommittedStream, nil
	case "pending":
		return managedwriter.PendingStream, nil
	case "buffered":
		return managedwriter.BufferedStream, nil
	}
	return "", fmt.Errorf("--mode: unknown mode %q (default, committed, pending, buffered)", mode)
}

// Write runs the write workload and returns what it measured.
func Write(ctx context.Context, cfg WriteConfig) (*Result, error) {
	if cfg.Rows <= 0 {
		return nil, fmt.Errorf("--rows must be positive")
	}
	if cfg.RowBytes <= 0 {
		cfg.RowBytes = 1200
	}
	if cfg.RequestBytes <= 0 {
		cfg.RequestBytes = 1 << 20
	}
	if cfg.Streams <= 0 {
		cfg.Streams = 1
	}
	st, err := streamType(cfg.Mode)
	if err != nil {
		return nil, err
	}
	created, err := ensureTable(ctx, &cfg.Target, benchSchema)
	if err != nil {
		return nil, err
	}
	// Into an existing table, the run verifies what it adds to it.
	var base idSums
	if !created && cfg.Verify {
		if base, err = readIDSums(ctx, cfg.Target); err != nil {
			return nil, fmt.Errorf("verify: the table's rows before the run: %w", err)
		}
	}
	if created && cfg.Cleanup {
		defer func() { _ = dropTable(cfg.Target) }()
	}
	desc, err := benchDescriptor()
	if err != nil {
		return nil, err
	}
	mw, err := managedwriter.NewClient(ctx, cfg.Project, cfg.grpcOptions()...)
	if err != nil {
		return nil, err
	}
	defer mw.Close()

	enc := newRowEncoder(cfg.RowBytes)
	rowsPerReq := max(1, cfg.RequestBytes/enc.rowSize)
	res := &Result{Workload: "write", Mode: cfg.Mode, Streams: cfg.Streams, Table: cfg.tablePath()}
	var latMu sync.Mutex
	var lats []float64

	cpu0 := selfCPU()
	var srv0 procSample
	if cfg.ServerPID > 0 {
		srv0 = sampleProc(cfg.ServerPID)
	}
	start := time.Now()
	names := make([]string, cfg.Streams)
	g, gctx := errgroup.WithContext(ctx)
	per := cfg.Rows / int64(cfg.Streams)
	for s := 0; s < cfg.Streams; s++ {
		first := int64(s) * per
		n := per
		if s == cfg.Streams-1 {
			n = cfg.Rows - first
		}
		g.Go(func() error {
			ms, err := mw.NewManagedStream(gctx,
				managedwriter.WithDestinationTable(cfg.tablePath()),
				managedwriter.WithType(st),
				managedwriter.WithSchemaDescriptor(desc),
				managedwriter.WithMaxInflightBytes(32<<20),
				managedwriter.WithMaxInflightRequests(64))
			if err != nil {
				return err
			}
			defer ms.Close()
			names[s] = ms.StreamName()
			type sent struct {
				r     *managedwriter.AppendResult
				start time.Time
			}
			results := make(chan sent, 128)
			waitErr := make(chan error, 1)
			go func() {
				var local []float64
				var firstErr error
				for x := range results {
					if _, err := x.r.GetResult(gctx); err != nil && firstErr == nil {
						firstErr = err
					}
					local = append(local, time.Since(x.start).Seconds())
				}
				latMu.Lock()
				lats = append(lats, local...)
				latMu.Unlock()
				waitErr <- firstErr
			}()
			ts := time.Now().UnixMicro()
			var off int64
			var sendErr error
			for off < n {
				k := min(int64(rowsPerReq), n-off)
				rows := make([][]byte, k)
				buf := make([]byte, 0, int(k)*(enc.rowSize+1))
				for i := range rows {
					b0 := len(buf)
					buf = enc.encode(buf, first+off+int64(i), ts+rand.Int64N(1e6))
					rows[i] = buf[b0:len(buf):len(buf)]
				}
				var opts []managedwriter.AppendOption
				if st != managedwriter.DefaultStream {
					opts = append(opts, managedwriter.WithOffset(off))
				}
				t0 := time.Now()
				r, err := ms.AppendRows(gctx, rows, opts...)
				if err != nil {
					sendErr = err
					break
				}
				results <- sent{r, t0}
				off += k
			}
			close(results)
			if err := <-waitErr; err != nil {
				return fmt.Errorf("append: %w", err)
			}
			if sendErr != nil {
				return fmt.Errorf("append: %w", sendErr)
			}
			switch st {
			case managedwriter.BufferedStream:
				if _, err := ms.FlushRows(gctx, n-1); err != nil {
					return fmt.Errorf("flush: %w", err)
				}
			case managedwriter.PendingStream:
				if _, err := ms.Finalize(gctx); err != nil {
					return fmt.Errorf("finalize: %w", err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if st == managedwriter.PendingStream {
		resp, err := mw.BatchCommitWriteStreams(ctx, &storagepb.BatchCommitWriteStreamsRequest{
			Parent: cfg.tablePath(), WriteStreams: names,
		})
		if err != nil {
			return nil, fmt.Errorf("batch commit: %w", err)
		}
		if len(resp.GetStreamErrors()) > 0 {
			return nil, fmt.Errorf("batch commit: stream errors: %v", resp.GetStreamErrors())
		}
	}
	res.Rows = cfg.Rows
	res.Bytes = cfg.Rows * int64(enc.rowSize)
	res.finish(start, cpu0, srv0, cfg.ServerPID)
	res.percentiles(lats)

	if cfg.Verify {
		if err := verifyIDs(ctx, cfg.Target, base, cfg.Rows); err != nil {
			res.VerifyError = err.Error()
			return res, fmt.Errorf("verify: %w", err)
		}
		res.Verified = true
	}
	return res, nil
}
