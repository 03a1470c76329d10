package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/internal/quota"
	"github.com/bqstore/bqstore/internal/resource"
)

// injectedError is the status a fault answers with. The message names the
// fault and the connection ordinal so that a client's error can be matched
// with the server's log line.
func injectedError(code codes.Code, k Kind, c *call, what string) error {
	return status.Error(code, fmt.Sprintf("bqstore fault injection: %s (conn %d, request %d): %s", k, c.conn, c.request, what))
}

// UnaryServerInterceptor injects the faults of the unary Storage API
// methods: CreateWriteStream quota storms and the commit, finalize and
// flush faults. It also remembers read sessions' tables for read.reset
// scopes.
func (in *Injector) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*storagepb.CreateReadSessionRequest); ok {
			resp, err := handler(ctx, req)
			if s, ok := resp.(*storagepb.ReadSession); ok && err == nil {
				in.sessions.put(s.GetName(), r.GetReadSession().GetTable())
			}
			return resp, err
		}
		if in.nfaults.Load() == 0 {
			return handler(ctx, req)
		}
		c := &call{ctx: ctx, rpc: methodName(info.FullMethod), conn: in.conns.Add(1), request: 1}
		var fail, drop Kind
		switch r := req.(type) {
		case *storagepb.CreateWriteStreamRequest:
			c.table, _ = resource.ParseTable("parent", r.GetParent())
			c.streamType = streamTypeName(r.GetWriteStream().GetType())
			for _, f := range in.fire(c, Quota) {
				in.report(f, c, "RESOURCE_EXHAUSTED before the stream is created")
				return nil, quota.CreateWriteStreamError(c.table.Project, r.GetParent())
			}
			return handler(ctx, req)
		case *storagepb.BatchCommitWriteStreamsRequest:
			c.table, _ = resource.ParseTable("parent", r.GetParent())
			fail, drop = CommitFail, CommitDropReply
		case *storagepb.FinalizeWriteStreamRequest:
			in.describeStream(c, r.GetName())
			fail, drop = FinalizeFail, FinalizeDropReply
		case *storagepb.FlushRowsRequest:
			in.describeStream(c, r.GetWriteStream())
			fail, drop = FlushFail, FlushDropReply
		default:
			return handler(ctx, req)
		}
		fs := in.fire(c, fail, drop)
		for _, f := range fs {
			if f.Kind == fail {
				in.report(f, c, "failed before the call ran", "code", f.Code)
				code, _ := codeByName(f.Code)
				return nil, injectedError(code, f.Kind, c, "failed before the call ran")
			}
		}
		if len(fs) == 0 {
			return handler(ctx, req)
		}
		_, err := handler(ctx, req)
		outcome := "ok"
		if err != nil {
			outcome = status.Code(err).String()
		}
		in.report(fs[0], c, "reply dropped after the call ran", "outcome", outcome)
		return nil, injectedError(codes.Unavailable, fs[0].Kind, c, "the reply was lost after the call ran")
	}
}

// describeStream fills in the call's stream, table and (lazily) type.
func (in *Injector) describeStream(c *call, name string) {
	c.stream = name
	ws, err := resource.ParseWriteStream("name", name)
	if err != nil {
		return
	}
	c.table = ws.Table
	if ws.IsDefault() {
		c.streamType = "_default"
		return
	}
	if in.types != nil {
		c.streamTypeFunc = func() string {
			t, err := in.types.WriteStreamType(c.ctx, ws)
			if err != nil {
				return ""
			}
			return t
		}
	}
}

func streamTypeName(t storagepb.WriteStream_Type) string {
	switch t {
	case storagepb.WriteStream_COMMITTED:
		return "COMMITTED"
	case storagepb.WriteStream_PENDING:
		return "PENDING"
	case storagepb.WriteStream_BUFFERED:
		return "BUFFERED"
	}
	return ""
}

func methodName(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}

// StreamServerInterceptor injects the AppendRows and ReadRows faults.
func (in *Injector) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		switch info.FullMethod {
		case storagepb.BigQueryWrite_AppendRows_FullMethodName:
			if !in.armed.Load() {
				return handler(srv, ss)
			}
			as := &appendStream{
				ServerStream: ss, in: in, conn: in.conns.Add(1),
				broken: make(chan struct{}), marks: make(map[int64]mark), types: make(map[string]func() string),
			}
			return as.finish(handler(srv, as))
		case storagepb.BigQueryRead_ReadRows_FullMethodName:
			if in.nfaults.Load() == 0 {
				return handler(srv, ss)
			}
			rs := &readStream{ServerStream: ss, in: in, conn: in.conns.Add(1)}
			err := handler(srv, rs)
			if rs.err != nil {
				return rs.err
			}
			return err
		}
		return handler(srv, ss)
	}
}

// appendStream is an AppendRows stream under fault injection.
//
// Responses pair with requests by ordinal: the service sends exactly one
// response per request, in request order, and only once the request's rows
// are durable. A fault decided on request n therefore acts on response n.
//
// RecvMsg runs on the handler's receiving goroutine and SendMsg on its
// sending goroutine; marks (guarded by mu) carry decisions from one to the
// other. The real RecvMsg runs on pump, so that a fault can end the
// handler's wait for the next request: a broken connection must end even
// when the client, waiting for the lost response, sends nothing more.
type appendStream struct {
	grpc.ServerStream
	in   *Injector
	conn int64

	// Receiving goroutine only.
	reqs    int64                    // requests received
	stream  string                   // the connection's current write stream
	ws      resource.WriteStream     // parsed stream
	types   map[string]func() string // lazy stream-type lookups by stream name
	pumpReq chan any
	pumpRes chan error

	// endErr, once set, ends the receive side: the handler gets it from
	// RecvMsg, answers the requests it already has, and returns. Receiving
	// goroutine only (and finish, after the handler returned).
	endErr error

	// Sending goroutine only.
	sent int64

	mu    sync.Mutex
	marks map[int64]mark // by request ordinal; REQUIRES mu
	err   error          // why the connection broke; REQUIRES mu

	broken chan struct{} // closed when a fault breaks the connection
}

// mark is what faults decided for one request's response.
type mark struct {
	c       call
	delays  []fired
	delay   time.Duration
	lostAck *fired
}

func (as *appendStream) breakWith(err error) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.err == nil {
		as.err = err
		close(as.broken)
	}
	return as.err
}

func (as *appendStream) brokenErr() error {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.err
}

func (as *appendStream) finish(err error) error {
	if as.pumpReq != nil {
		close(as.pumpReq)
	}
	if e := as.brokenErr(); e != nil {
		return e
	}
	if as.endErr != nil {
		return as.endErr
	}
	return err
}

func (as *appendStream) pump() {
	for m := range as.pumpReq {
		as.pumpRes <- as.ServerStream.RecvMsg(m)
	}
}

func (as *appendStream) RecvMsg(m any) error {
	if as.endErr != nil {
		return as.endErr
	}
	if as.pumpReq == nil {
		as.pumpReq = make(chan any)
		as.pumpRes = make(chan error, 1)
		go as.pump()
	}
	select {
	case as.pumpReq <- m:
	case <-as.broken:
		return as.brokenErr()
	}
	select {
	case err := <-as.pumpRes:
		if err != nil {
			return err
		}
	case <-as.broken:
		return as.brokenErr()
	}
	req, ok := m.(*storagepb.AppendRowsRequest)
	if !ok {
		return nil
	}
	as.reqs++
	if name := req.GetWriteStream(); name != "" && name != as.stream {
		as.stream = name
		as.ws, _ = resource.ParseWriteStream("write_stream", name)
	}
	c := call{ctx: as.Context(), rpc: RPCAppendRows, table: as.ws.Table, stream: as.stream, conn: as.conn, request: as.reqs}
	c.streamTypeFunc = as.typeFunc()
	fs := as.in.fire(&c, Quota, AppendReset, AppendStall, AppendLatency)
	if len(fs) == 0 {
		return nil
	}
	var mk mark
	for _, f := range fs {
		switch {
		// These two end the connection at this request: the earlier ones
		// are answered, this one and later ones are never processed.
		case f.Kind == Quota:
			as.in.report(f, &c, "RESOURCE_EXHAUSTED before the rows are written")
			as.endErr = quota.AppendRowsThroughputError(as.ws.Project, as.stream)
			return as.endErr
		case f.Kind == AppendReset && f.When == "before":
			as.in.report(f, &c, "connection reset before the rows are written")
			as.endErr = injectedError(codes.Unavailable, f.Kind, &c, "connection reset before the rows were written")
			return as.endErr
		case f.Kind == AppendReset:
			mk.lostAck = &f
		case f.Kind == AppendStall:
			mk.delays = append(mk.delays, f)
			mk.delay += time.Duration(f.Duration)
		case f.Kind == AppendLatency:
			mk.delays = append(mk.delays, f)
			mk.delay += f.latency()
		}
	}
	mk.c = c
	mk.c.streamTypeFunc = nil
	as.mu.Lock()
	as.marks[as.reqs] = mk
	as.mu.Unlock()
	return nil
}

// typeFunc returns the lazy stream-type lookup of the current stream,
// shared by the requests that name it.
func (as *appendStream) typeFunc() func() string {
	if as.stream == "" {
		return nil
	}
	if f, ok := as.types[as.stream]; ok {
		return f
	}
	ws, ctx, in := as.ws, as.Context(), as.in
	var once sync.Once
	var typ string
	f := func() string {
		once.Do(func() {
			switch {
			case ws.ID == "":
			case ws.IsDefault():
				typ = "_default"
			case in.types != nil:
				typ, _ = in.types.WriteStreamType(ctx, ws)
			}
		})
		return typ
	}
	as.types[as.stream] = f
	return f
}

func (as *appendStream) SendMsg(m any) error {
	select {
	case <-as.broken:
		return as.brokenErr()
	default:
	}
	as.sent++
	as.mu.Lock()
	mk, ok := as.marks[as.sent]
	delete(as.marks, as.sent)
	as.mu.Unlock()
	if !ok {
		return as.ServerStream.SendMsg(m)
	}
	if mk.delay > 0 {
		for _, f := range mk.delays {
			as.in.report(f, &mk.c, "response held", "delay", mk.delay)
		}
		t := time.NewTimer(mk.delay)
		select {
		case <-t.C:
		case <-as.Context().Done():
			t.Stop()
			return status.FromContextError(as.Context().Err()).Err()
		case <-as.broken:
			t.Stop()
			return as.brokenErr()
		}
	}
	if f := mk.lostAck; f != nil {
		as.in.report(*f, &mk.c, "response dropped after the rows are durable")
		return as.breakWith(injectedError(codes.Unavailable, f.Kind, &mk.c, "connection reset after the rows were written; the acknowledgement was lost"))
	}
	return as.ServerStream.SendMsg(m)
}

// readStream is a ReadRows stream under fault injection.
type readStream struct {
	grpc.ServerStream
	in   *Injector
	conn int64

	c     call
	fault *fired
	sent  int64
	err   error
}

func (rs *readStream) RecvMsg(m any) error {
	if err := rs.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	req, ok := m.(*storagepb.ReadRowsRequest)
	if !ok {
		return nil
	}
	rs.c = call{ctx: rs.Context(), rpc: "ReadRows", stream: req.GetReadStream(), conn: rs.conn, request: 1}
	if r, err := resource.ParseReadStream("read_stream", req.GetReadStream()); err == nil {
		if t := rs.in.sessions.get(r.SessionName()); t != "" {
			rs.c.table, _ = resource.ParseTable("table", t)
		}
	}
	if fs := rs.in.fire(&rs.c, ReadReset); len(fs) > 0 {
		rs.fault = &fs[0]
	}
	return nil
}

func (rs *readStream) SendMsg(m any) error {
	if rs.err != nil {
		return rs.err
	}
	if rs.fault != nil && rs.sent >= rs.fault.Messages {
		rs.in.report(*rs.fault, &rs.c, "stream reset", "messages_sent", rs.sent)
		rs.err = injectedError(codes.Unavailable, ReadReset, &rs.c,
			fmt.Sprintf("stream reset after %d responses; resume from the last offset read", rs.sent))
		return rs.err
	}
	rs.sent++
	return rs.ServerStream.SendMsg(m)
}
