package writeapi

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/recvbudget"
	"github.com/bqstore/bqstore/internal/resource"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/arrowrows"
	"github.com/bqstore/bqstore/internal/schema/protorows"
	"github.com/bqstore/bqstore/internal/storage"
)

// AppendRows serves one bidirectional AppendRows connection.
//
// Shape (docs/architecture.md): the handler goroutine receives, validates,
// decodes and submits each request to the engine in request order (so
// offset checks see requests in the order the client sent them); a single
// sender goroutine, owned by this call and waited for before it returns,
// writes one response per request in the same order, each as soon as its
// rows are durable. The queue between them is bounded
// (Options.MaxInflightRequests): when the client sends faster than the disk
// acknowledges, the handler stops receiving and gRPC flow control pushes
// back on the client. Requests are never blocked on the client reading
// responses other than through that bound.
//
// Per-request failures are answered in-band (AppendRowsResponse.error with
// a StorageError detail, row_errors for bad rows) and the connection stays
// usable; only a broken transport ends the call.
func (s *Service) AppendRows(stream storagepb.BigQueryWrite_AppendRowsServer) error {
	s.metrics.connections.Inc()
	defer s.metrics.connections.Dec()

	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	c := newConn(ctx, s)
	var wg sync.WaitGroup
	var sendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		sendErr = c.sendLoop(stream)
		if sendErr != nil {
			cancel()
		}
	}()

	recvErr := c.recvLoop(stream)
	close(c.queue)
	wg.Wait()
	switch {
	case recvErr != nil:
		return recvErr
	case sendErr != nil:
		return sendErr
	}
	return nil
}

// conn is the state of one AppendRows connection. It is owned by the
// handler goroutine; the sender goroutine only reads the inflight items it
// is handed.
type conn struct {
	s   *Service
	ctx context.Context
	cur *connStream // destination of requests without write_stream
	// streams holds the state of the destinations named most recently
	// (by stream name as the client sent it), at most
	// Options.MaxConnStreams of them; lru orders them, most recent first.
	// A multiplexing client can name any number of streams on one
	// connection: the least recently named state is evicted (the client
	// sends the writer schema again with the stream name whenever it
	// switches destination, so eviction costs a lookup, not an error).
	// Invariant: len(streams) == lru.Len() <= Options.MaxConnStreams.
	streams map[string]*list.Element // of *connStream
	lru     list.List
	queue   chan *inflight
	// defaultMVI is the sticky default_missing_value_interpretation.
	defaultMVI storagepb.AppendRowsRequest_MissingValueInterpretation
}

func newConn(ctx context.Context, s *Service) *conn {
	return &conn{
		s:       s,
		ctx:     ctx,
		streams: make(map[string]*list.Element),
		queue:   make(chan *inflight, s.opts.MaxInflightRequests),
	}
}

// connStream is what a connection knows of one destination stream.
type connStream struct {
	name  string // as the client named it, echoed in responses
	ref   resource.WriteStream
	err   error // set when the destination itself is unusable (bad name, missing table or stream)
	info  TableInfo
	table *storage.Table
	typ   storage.StreamType

	// The writer schema last sent for this stream and its compiled
	// decoder (against info.Schema at info.SchemaVersion).
	descBytes []byte
	desc      *protorows.Decoder
	descErr   error
	arrowSch  []byte // serialized Arrow writer schema (arrow_rows)
	arrowDec  *arrowrows.Decoder
	arrowErr  error
	// pendingSchemaUpdate is set when the table schema changed since this
	// connection last told the client; the next response carries it.
	pendingSchemaUpdate bool
}

// inflight is one request between the handler and the sender.
type inflight struct {
	start   time.Time
	name    string
	typ     storage.StreamType
	rows    int
	bytes   int
	pending *storage.PendingAppend // nil when resp is already complete
	resp    *storagepb.AppendRowsResponse
	update  *storagepb.TableSchema
}

func (c *conn) recvLoop(stream storagepb.BigQueryWrite_AppendRowsServer) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		// Counted from receipt (Idle must not report true while a
		// received request is being handled) until the sender has
		// answered or dropped it: every item is queued, never dropped
		// here, and the sender accounts for each one.
		c.s.unanswered.Add(1)
		item := c.handle(req)
		// The request is decoded and what its append keeps holds the
		// engine's in-flight budget (or it was answered): its receive
		// admission can go (recvbudget).
		recvbudget.Done(stream.Context())
		// The sender drains the queue until it is closed, even after a
		// failed Send, so this cannot block for longer than a Send.
		c.queue <- item
		if c.ctx.Err() != nil {
			// The sender failed or the client is gone: stop receiving.
			return nil
		}
	}
}

// handle validates, decodes and submits one request and returns what the
// sender needs to answer it.
func (c *conn) handle(req *storagepb.AppendRowsRequest) *inflight {
	item := &inflight{start: time.Now(), name: req.GetWriteStream()}
	fail := func(err error) *inflight {
		item.resp = errorResponse(err, item.name)
		return item
	}
	if c.s.draining.Load() {
		if c.cur != nil && item.name == "" {
			item.name = c.cur.name
		}
		return fail(status.Error(codes.Unavailable, "the server is shutting down; reconnect and retry"))
	}
	// The destination and writer schema are taken even from a request
	// that is refused below: clients send them only on a connection's
	// first request (or when they change), and the connection must stay
	// usable after an in-band error.
	if req.GetWriteStream() != "" {
		c.cur = c.stream(req.GetWriteStream())
	}
	st := c.cur
	if st == nil {
		return fail(apierr.InvalidArgument("write_stream: required on the first request of a connection"))
	}
	item.name = st.name
	item.typ = st.typ
	if st.err != nil {
		return fail(st.err)
	}
	// The in-flight budget is taken before anything is compiled or
	// decoded, for the request and what decoding it builds (about as
	// much again), so that the budget bounds requests being decoded and
	// not only frames waiting for their sync. While this waits, the
	// connection receives nothing more: gRPC flow control holds the
	// client back. The append keeps what its log frame needs.
	item.bytes = proto.Size(req)
	res, err := c.s.db.Reserve(c.ctx, 2*int64(item.bytes))
	if err != nil {
		return fail(err)
	}
	defer res.Release()
	if err := c.noteWriterSchema(st, req); err != nil {
		return fail(err)
	}
	if item.bytes > c.s.opts.MaxRequestBytes {
		return fail(apierr.InvalidArgument("AppendRows request too large: %d bytes, the limit is %d bytes", item.bytes, c.s.opts.MaxRequestBytes))
	}
	if err := c.refreshSchema(st); err != nil {
		return fail(err)
	}
	if st.pendingSchemaUpdate {
		item.update = schema.ToStorage(st.info.Schema)
		st.pendingSchemaUpdate = false
	}
	if req.GetDefaultMissingValueInterpretation() != storagepb.AppendRowsRequest_MISSING_VALUE_INTERPRETATION_UNSPECIFIED {
		c.defaultMVI = req.GetDefaultMissingValueInterpretation()
	}
	mv, err := c.missingValues(req)
	if err != nil {
		return fail(err)
	}

	offset := int64(-1)
	if o := req.GetOffset(); o != nil {
		if st.ref.IsDefault() {
			return fail(apierr.InvalidArgument("offset: not allowed on the _default stream"))
		}
		if o.GetValue() < 0 {
			return fail(apierr.InvalidArgument("offset: must not be negative, got %d", o.GetValue()))
		}
		offset = o.GetValue()
	}

	var rec arrow.Record
	switch rows := req.GetRows().(type) {
	case *storagepb.AppendRowsRequest_ProtoRows:
		rec, err = c.decodeProto(st, rows.ProtoRows, mv)
		item.rows = len(rows.ProtoRows.GetRows().GetSerializedRows())
	case *storagepb.AppendRowsRequest_ArrowRows:
		rec, err = c.decodeArrow(st, rows.ArrowRows, mv)
		if rec != nil {
			item.rows = int(rec.NumRows())
		}
	default:
		return fail(apierr.InvalidArgument("rows: one of proto_rows or arrow_rows is required"))
	}
	if err != nil {
		return fail(err)
	}
	if c.s.opts.Admit != nil {
		if err := c.s.opts.Admit(); err != nil {
			rec.Release()
			return fail(err)
		}
	}
	p, err := st.table.AppendAsync(c.ctx, storage.AppendRequest{
		Stream:        st.ref.ID,
		Offset:        offset,
		Batch:         rec,
		SchemaVersion: st.info.SchemaVersion,
		Reservation:   res,
	})
	// The engine has encoded the batch into its log frame: the decoder's
	// pooled column buffers can be reused.
	rec.Release()
	if err != nil {
		return fail(err)
	}
	item.pending = p
	return item
}

// stream returns the connection's state for a destination, creating it on
// first use.
func (c *conn) stream(name string) *connStream {
	if e, ok := c.streams[name]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*connStream)
	}
	for c.lru.Len() >= c.s.opts.MaxConnStreams {
		// Never the current destination: it is always the most recent.
		old := c.lru.Remove(c.lru.Back()).(*connStream)
		delete(c.streams, old.name)
	}
	st := &connStream{name: name}
	c.streams[name] = c.lru.PushFront(st)
	ref, err := resource.ParseWriteStream("write_stream", name)
	if err != nil {
		st.err = err
		return st
	}
	st.ref = ref
	info, t, err := c.s.table(c.ctx, ref.Table)
	if err != nil {
		st.err = apierr.Status(err, ref.Table.String()).Err()
		return st
	}
	si, err := t.Stream(ref.ID)
	if err != nil {
		st.err = apierr.Status(err, ref.String()).Err()
		return st
	}
	st.info, st.table, st.typ = info, t, si.Type
	return st
}

// refreshSchema notices a table schema change (a REST patch) and moves the
// stream's decoding to the new schema; the next response tells the client.
func (c *conn) refreshSchema(st *connStream) error {
	v, _ := st.table.Schema()
	if v == st.info.SchemaVersion {
		return nil
	}
	info, err := c.s.tables.LookupTable(c.ctx, st.ref.Project, st.ref.Dataset, st.ref.Table.Table)
	if err != nil {
		return err
	}
	if info.ID != st.info.ID {
		// The table was dropped and recreated under the same name: the
		// stream belonged to the old one.
		return storage.ErrStreamNotFound
	}
	if info.SchemaVersion != st.info.SchemaVersion {
		st.info = info
		st.pendingSchemaUpdate = true
		st.desc, st.descErr = nil, nil
		st.arrowDec, st.arrowErr = nil, nil
	}
	return nil
}

func (c *conn) missingValues(req *storagepb.AppendRowsRequest) (protorows.MissingValues, error) {
	var mv protorows.MissingValues
	conv := func(field string, v storagepb.AppendRowsRequest_MissingValueInterpretation) (protorows.Interpretation, error) {
		switch v {
		case storagepb.AppendRowsRequest_NULL_VALUE:
			return protorows.NullValue, nil
		case storagepb.AppendRowsRequest_DEFAULT_VALUE:
			return protorows.DefaultValue, nil
		}
		return 0, apierr.InvalidArgument("%s: unsupported missing value interpretation %s", field, v)
	}
	if c.defaultMVI != storagepb.AppendRowsRequest_MISSING_VALUE_INTERPRETATION_UNSPECIFIED {
		d, err := conv("default_missing_value_interpretation", c.defaultMVI)
		if err != nil {
			return mv, err
		}
		mv.Default = d
	}
	if m := req.GetMissingValueInterpretations(); len(m) > 0 {
		mv.PerColumn = make(map[string]protorows.Interpretation, len(m))
		for col, v := range m {
			d, err := conv("missing_value_interpretations["+strconv.Quote(col)+"]", v)
			if err != nil {
				return mv, err
			}
			mv.PerColumn[col] = d
		}
	}
	return mv, nil
}

// noteWriterSchema records a writer schema the request carries (proto
// descriptor or Arrow schema) for its stream when it differs from the last
// one. It is compiled against the table schema on first use, by the
// decode step: after the request's size has been checked, so that an
// oversized request never has its schema compiled.
func (c *conn) noteWriterSchema(st *connStream, req *storagepb.AppendRowsRequest) error {
	if ws := req.GetArrowRows().GetWriterSchema().GetSerializedSchema(); len(ws) > 0 && !bytes.Equal(ws, st.arrowSch) {
		st.arrowSch = bytes.Clone(ws)
		st.arrowDec, st.arrowErr = nil, nil
	}
	ws := req.GetProtoRows().GetWriterSchema().GetProtoDescriptor()
	if ws == nil {
		return nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ws)
	if err != nil {
		return apierr.InvalidArgument("proto_rows.writer_schema: %v", err)
	}
	if st.descBytes == nil || !bytes.Equal(b, st.descBytes) {
		st.descBytes = b
		st.desc, st.descErr = nil, nil
	}
	return nil
}

func (c *conn) decodeProto(st *connStream, pr *storagepb.AppendRowsRequest_ProtoData, mv protorows.MissingValues) (arrow.Record, error) {
	if st.desc == nil && st.descErr == nil {
		if st.descBytes == nil {
			return nil, apierr.InvalidArgument("proto_rows.writer_schema: required on the first request for stream %s", st.name)
		}
		// A new descriptor, or the table schema changed under a known
		// one: compile it.
		d := new(descriptorpb.DescriptorProto)
		if err := proto.Unmarshal(st.descBytes, d); err != nil {
			return nil, apierr.InvalidArgument("proto_rows.writer_schema: %v", err)
		}
		st.desc, st.descErr = protorows.Compile(d, st.info.Schema)
	}
	if st.descErr != nil {
		return nil, writerSchemaError(st.descErr, st.name)
	}
	rows := pr.GetRows().GetSerializedRows()
	if len(rows) == 0 {
		return nil, apierr.InvalidArgument("proto_rows.rows.serialized_rows: at least one row is required")
	}
	rec, rowErrs, err := st.desc.Decode(rows, mv)
	if err != nil {
		return nil, apierr.InvalidArgument("proto_rows: %v", err)
	}
	if len(rowErrs) > 0 {
		return nil, &rowErrorsError{errs: rowErrs}
	}
	return rec, nil
}

func (c *conn) decodeArrow(st *connStream, ar *storagepb.AppendRowsRequest_ArrowData, mv protorows.MissingValues) (arrow.Record, error) {
	if st.arrowSch == nil {
		return nil, apierr.InvalidArgument("arrow_rows.writer_schema: required on the first request for stream %s", st.name)
	}
	if st.arrowDec == nil && st.arrowErr == nil {
		// A new writer schema, or the table schema changed under a known
		// one: compile it.
		st.arrowDec, st.arrowErr = arrowrows.Compile(st.arrowSch, st.info.Schema)
	}
	if st.arrowErr != nil {
		return nil, writerSchemaError(st.arrowErr, st.name)
	}
	rec, rowErrs, err := st.arrowDec.Decode(ar.GetRows().GetSerializedRecordBatch(), mv)
	if err != nil {
		return nil, apierr.InvalidArgument("arrow_rows.rows: %v", err)
	}
	if len(rowErrs) > 0 {
		return nil, &rowErrorsError{errs: rowErrs}
	}
	if rec.NumRows() == 0 {
		rec.Release()
		return nil, apierr.InvalidArgument("arrow_rows.rows: at least one row is required")
	}
	return rec, nil
}

// writerSchemaError maps a descriptor or Arrow schema that does not fit the
// table.
func writerSchemaError(err error, stream string) error {
	var extra *protorows.ExtraFieldError
	if errors.As(err, &extra) {
		return apierr.New(codes.InvalidArgument, storagepb.StorageError_SCHEMA_MISMATCH_EXTRA_FIELDS, stream,
			"Input schema has more fields than BigQuery schema, extra fields: '%s'", extra.Field)
	}
	return apierr.InvalidArgument("writer_schema: %v", err)
}

// rowErrorsError carries row errors to the response.
type rowErrorsError struct{ errs []protorows.RowError }

func (e *rowErrorsError) Error() string {
	return "Errors found while processing rows. Please refer to the row_errors field for details. The list may not be complete because of the size limitations. Entity: rows"
}

func errorResponse(err error, name string) *storagepb.AppendRowsResponse {
	resp := &storagepb.AppendRowsResponse{WriteStream: name}
	var re *rowErrorsError
	if errors.As(err, &re) {
		resp.RowErrors = make([]*storagepb.RowError, len(re.errs))
		for i, e := range re.errs {
			// A message may quote the row's bytes: it must be UTF-8 to
			// marshal.
			resp.RowErrors[i] = &storagepb.RowError{Index: int64(e.Index), Code: storagepb.RowError_FIELDS_ERROR, Message: strings.ToValidUTF8(e.Message, "\uFFFD")}
		}
		err = apierr.InvalidArgument("%s", re.Error())
	}
	resp.Response = &storagepb.AppendRowsResponse_Error{Error: apierr.Status(err, name).Proto()}
	return resp
}

// sendLoop answers requests in order as their appends become durable.
func (c *conn) sendLoop(stream storagepb.BigQueryWrite_AppendRowsServer) error {
	var failed error
	for item := range c.queue {
		if failed != nil {
			c.s.unanswered.Add(-1)
			continue // drain: the handler stops at ctx cancellation
		}
		resp := item.resp
		if item.pending != nil {
			res, err := item.pending.Wait(c.ctx)
			if err != nil {
				resp = errorResponse(err, item.name)
			} else {
				resp = &storagepb.AppendRowsResponse{WriteStream: item.name}
				ar := &storagepb.AppendRowsResponse_AppendResult{}
				if res.Offset >= 0 {
					ar.Offset = wrapperspb.Int64(res.Offset)
				}
				resp.Response = &storagepb.AppendRowsResponse_AppendResult_{AppendResult: ar}
				t := typeLabel(item.typ)
				c.s.metrics.rows.WithLabelValues(t).Add(float64(item.rows))
				c.s.metrics.bytes.WithLabelValues(t).Add(float64(item.bytes))
				c.s.metrics.appendLatency.WithLabelValues(t).Observe(time.Since(item.start).Seconds())
			}
		}
		if e := resp.GetError(); e != nil {
			c.s.metrics.appendErrors.WithLabelValues(codes.Code(e.GetCode()).String()).Inc()
		}
		if item.update != nil {
			resp.UpdatedSchema = item.update
		}
		if err := stream.Send(resp); err != nil {
			failed = err
		}
		c.s.unanswered.Add(-1)
	}
	return failed
}
