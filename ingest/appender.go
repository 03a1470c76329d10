package ingest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// appender writes one PENDING stream with explicit offsets over one
// AppendRows connection, pipelining: send does not wait for responses; a
// receiver goroutine pairs responses with requests in order (the server
// answers in request order) and releases their memory budget.
//
// Goroutine lifetime: the receiver starts in newAppender and ends before
// close returns.
type appender struct {
	p        *pipeline
	name     string
	desc     *descriptorpb.DescriptorProto
	cancel   context.CancelFunc
	rpc      storagepb.BigQueryWrite_AppendRowsClient
	next     int64 // offset of the next row to send
	sent     int   // requests sent
	inflight chan inflightReq
	once     sync.Once
	recvDone chan struct{}
	firstAck chan struct{} // closed after the first response (or failure)
	acked    atomic.Int64  // rows acknowledged
	err      error         // first failure; read only after recvDone
	// rowErrs are the row_errors of the first failed response, by stream
	// offset; read only after recvDone.
	rowErrs []rowError
}

// rowError is a row the server refused (AppendRowsResponse.row_errors),
// addressed by its offset in the stream.
type rowError struct {
	offset int64
	msg    string
}

type inflightReq struct {
	offset int64
	rows   int64
	bytes  int64
	sentAt time.Time
}

func newAppender(ctx context.Context, p *pipeline, name string, desc *descriptorpb.DescriptorProto) (*appender, error) {
	ctx, cancel := context.WithCancel(ctx)
	rpc, err := p.cfg.Client.AppendRows(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("ingest: AppendRows %s: %w", name, err)
	}
	a := &appender{
		p: p, name: name, desc: desc, cancel: cancel, rpc: rpc,
		inflight: make(chan inflightReq, 4096),
		recvDone: make(chan struct{}),
		firstAck: make(chan struct{}),
	}
	go a.receive()
	return a, nil
}

func (a *appender) receive() {
	defer close(a.recvDone)
	first := true
	for r := range a.inflight {
		if a.err == nil {
			resp, err := a.rpc.Recv()
			switch {
			case err != nil:
				a.err = fmt.Errorf("ingest: AppendRows %s at offset %d: %w", a.name, r.offset, err)
			case resp.GetError() != nil:
				a.err = fmt.Errorf("ingest: AppendRows %s at offset %d: %s (code %d, row errors %d)",
					a.name, r.offset, resp.GetError().GetMessage(), resp.GetError().GetCode(), len(resp.GetRowErrors()))
				for _, re := range resp.GetRowErrors() {
					if i := re.GetIndex(); i >= 0 && i < r.rows {
						a.rowErrs = append(a.rowErrs, rowError{offset: r.offset + i, msg: fmt.Sprintf("%s: %s", re.GetCode(), re.GetMessage())})
					}
				}
			case resp.GetAppendResult().GetOffset() != nil && resp.GetAppendResult().GetOffset().GetValue() != r.offset:
				a.err = fmt.Errorf("ingest: AppendRows %s: response for offset %d, expected %d",
					a.name, resp.GetAppendResult().GetOffset().GetValue(), r.offset)
			default:
				a.acked.Add(r.rows)
				a.p.metrics.AppendLatency.Observe(time.Since(r.sentAt).Seconds())
			}
		}
		a.p.budget.Release(r.bytes)
		if first {
			close(a.firstAck)
			first = false
		}
	}
	if first {
		close(a.firstAck)
	}
}

// send appends rows (serialized, each rows[i] a slice of buf) at the next
// offset. It blocks while the memory budget is exhausted.
func (a *appender) send(ctx context.Context, buf []byte, rows [][]byte) error {
	size := min(int64(len(buf)), a.p.appendBudget)
	if !a.p.budget.TryAcquire(size) {
		t0 := time.Now()
		if err := a.p.budget.Acquire(ctx, size); err != nil {
			return err
		}
		a.p.metrics.BudgetPaused.Add(time.Since(t0).Seconds())
	}
	req := &storagepb.AppendRowsRequest{
		Offset: wrapperspb.Int64(a.next),
		Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
			Rows: &storagepb.ProtoRows{SerializedRows: rows},
		}},
	}
	if a.sent == 0 {
		req.WriteStream = a.name
		req.TraceId = "bqstore-ingest"
		req.GetProtoRows().WriterSchema = &storagepb.ProtoSchema{ProtoDescriptor: a.desc}
	}
	a.inflight <- inflightReq{offset: a.next, rows: int64(len(rows)), bytes: size, sentAt: time.Now()}
	a.sent++
	a.next += int64(len(rows))
	if err := a.rpc.Send(req); err != nil {
		// The receiver reports the server's reason (Send returns io.EOF).
		return fmt.Errorf("ingest: AppendRows %s: send: %w", a.name, err)
	}
	return nil
}

// close ends the request side and waits for every response. It returns the
// first failure; nil means every row sent was acknowledged.
func (a *appender) close() error {
	a.once.Do(func() {
		_ = a.rpc.CloseSend()
		close(a.inflight)
	})
	<-a.recvDone
	a.cancel()
	return a.err
}

// abort cancels the connection and waits for the receiver: rows in flight
// may or may not have been appended, which is harmless because the stream
// will never be sealed.
func (a *appender) abort() {
	a.cancel()
	_ = a.close()
}
