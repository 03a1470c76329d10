package server

// The request log: at --log-level debug, one line per gRPC call and per
// REST request, when it ends, with the method, the resource it named, the
// status code, the duration and the bytes each way:
//
//	level=DEBUG msg=request method=/google.cloud.bigquery.storage.v1.BigQueryWrite/AppendRows
//	    resource=projects/p/datasets/d/tables/t/streams/_default code=OK duration=1.2s bytes_in=10485812 bytes_out=361
//	level=DEBUG msg=request method=GET resource=/bigquery/v2/projects/p/datasets code=200 duration=310µs bytes_in=0 bytes_out=187
//
// It is installed only when the logger has debug enabled, so it costs
// nothing otherwise (gRPC byte counts are proto.Size of each message).

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// reqLogEnabled reports whether the request log is on for log.
func reqLogEnabled(log *slog.Logger) bool {
	return log.Enabled(context.Background(), slog.LevelDebug)
}

// resourceFields are the request fields that name what a call is about,
// in order of preference: the stream, else the table or session.
var resourceFields = []protoreflect.Name{"write_stream", "read_stream", "name", "parent"}

// requestResource is the resource a Storage API request names
// (CreateReadSession: its session's table).
func requestResource(m any) string {
	pm, ok := m.(proto.Message)
	if !ok {
		return ""
	}
	r := pm.ProtoReflect()
	fields := r.Descriptor().Fields()
	if f := fields.ByName("read_session"); f != nil && f.Kind() == protoreflect.MessageKind && r.Has(f) {
		rs := r.Get(f).Message()
		if tf := rs.Descriptor().Fields().ByName("table"); tf != nil && tf.Kind() == protoreflect.StringKind {
			if t := rs.Get(tf).String(); t != "" {
				return t
			}
		}
	}
	for _, n := range resourceFields {
		if f := fields.ByName(n); f != nil && f.Kind() == protoreflect.StringKind && !f.IsList() {
			if v := r.Get(f).String(); v != "" {
				return v
			}
		}
	}
	return ""
}

func msgSize(m any) int64 {
	if pm, ok := m.(proto.Message); ok {
		return int64(proto.Size(pm))
	}
	return 0
}

// logUnary is the request log's unary interceptor.
func logUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		var out int64
		if err == nil {
			out = msgSize(resp)
		}
		log.LogAttrs(ctx, slog.LevelDebug, "request", slog.String("method", info.FullMethod), slog.String("resource", requestResource(req)),
			slog.String("code", status.Code(err).String()), slog.Duration("duration", time.Since(start)),
			slog.Int64("bytes_in", msgSize(req)), slog.Int64("bytes_out", out))
		return resp, err
	}
}

// countingStream counts a stream's message bytes and remembers the
// resource its first request names. RecvMsg and SendMsg each run on one
// goroutine at a time, but not the same one: the counters are atomic.
type countingStream struct {
	grpc.ServerStream
	in, out  atomic.Int64
	resource atomic.Pointer[string]
}

func (s *countingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		s.in.Add(msgSize(m))
		if s.resource.Load() == nil {
			r := requestResource(m)
			s.resource.Store(&r)
		}
	}
	return err
}

func (s *countingStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil {
		s.out.Add(msgSize(m))
	}
	return err
}

// logStream is the request log's stream interceptor: one line when the
// stream ends.
func logStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		cs := &countingStream{ServerStream: ss}
		err := handler(srv, cs)
		res := ""
		if p := cs.resource.Load(); p != nil {
			res = *p
		}
		log.LogAttrs(ss.Context(), slog.LevelDebug, "request", slog.String("method", info.FullMethod), slog.String("resource", res),
			slog.String("code", status.Code(err).String()), slog.Duration("duration", time.Since(start)),
			slog.Int64("bytes_in", cs.in.Load()), slog.Int64("bytes_out", cs.out.Load()))
		return err
	}
}

// logHTTP is the request log's HTTP middleware.
func logHTTP(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		lw := &loggingWriter{ResponseWriter: w}
		var body *countingBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &countingBody{ReadCloser: r.Body}
			r.Body = body
		}
		next.ServeHTTP(lw, r)
		code := lw.code
		if code == 0 {
			code = http.StatusOK
		}
		var in int64
		if body != nil {
			in = body.n
		}
		log.LogAttrs(r.Context(), slog.LevelDebug, "request", slog.String("method", r.Method), slog.String("resource", r.URL.Path),
			slog.Int("code", code), slog.Duration("duration", time.Since(start)),
			slog.Int64("bytes_in", in), slog.Int64("bytes_out", lw.n))
	})
}

// loggingWriter records the status code and counts the body bytes.
type loggingWriter struct {
	http.ResponseWriter
	code int
	n    int64
}

func (w *loggingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *loggingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// Flush keeps streaming responses streaming.
func (w *loggingWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *loggingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts the request body bytes the handler read.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}
