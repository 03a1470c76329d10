// Package writeapi is the BigQueryWrite gRPC service. It only translates:
// requests are parsed and validated here, rows are decoded by
// internal/schema/protorows and arrowrows, stream semantics live in
// internal/storage, and every error reaches the wire through
// internal/apierr.
package writeapi

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/resource"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// TableInfo is what the Write API needs to know of a table from the
// catalog.
type TableInfo struct {
	// ID is the storage engine's table id.
	ID string
	// Schema is the current schema and SchemaVersion its version (the
	// same numbering the storage engine uses).
	Schema        *schema.Schema
	SchemaVersion int
	// Location is reported in WriteStream.location.
	Location string
}

// Tables resolves table names (the catalog implements it). LookupTable
// returns an error wrapping storage.ErrTableNotFound for a missing
// project, dataset or table.
type Tables interface {
	LookupTable(ctx context.Context, project, dataset, table string) (TableInfo, error)
}

// Options configures the service. Zero values mean the defaults.
type Options struct {
	// MaxRequestBytes is the largest AppendRows request accepted
	// (default 10 MB, the real service's limit).
	MaxRequestBytes int
	// MaxInflightRequests bounds the responses queued on one connection
	// (default 1024).
	MaxInflightRequests int
	// MaxConnStreams bounds the destinations one AppendRows connection
	// keeps state for (resolved table, compiled writer schema); the least
	// recently named is evicted beyond it (default 256).
	MaxConnStreams int
	// Admit, when set, is asked before each append is submitted to the
	// engine, the request decoded and holding its in-flight budget; an
	// error answers the request in-band and nothing of it is stored (the
	// server's disk quota).
	Admit  func() error
	Logger *slog.Logger
	// Clock is the time source (default time.Now).
	Clock func() time.Time
}

// DefaultMaxRequestBytes is the AppendRows request limit of the real
// service.
const DefaultMaxRequestBytes = 10 * 1000 * 1000

// Service implements storagepb.BigQueryWriteServer.
type Service struct {
	storagepb.UnimplementedBigQueryWriteServer
	tables  Tables
	db      *storage.DB
	opts    Options
	log     *slog.Logger
	metrics *Metrics

	// draining is set by Drain; unanswered counts AppendRows requests
	// received and not yet answered, over every connection.
	draining   atomic.Bool
	unanswered atomic.Int64
}

// Drain prepares a shutdown: AppendRows requests received from now on are
// answered in-band with UNAVAILABLE (clients retry against the restarted
// server), while those already received are answered as their rows become
// durable. Idle then reports when all are answered.
func (s *Service) Drain() { s.draining.Store(true) }

// Idle reports whether every AppendRows request received has been
// answered.
func (s *Service) Idle() bool { return s.unanswered.Load() == 0 }

// New returns the service. metrics may be nil.
func New(tables Tables, db *storage.DB, metrics *Metrics, opts Options) *Service {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxInflightRequests <= 0 {
		opts.MaxInflightRequests = 1024
	}
	if opts.MaxConnStreams <= 0 {
		opts.MaxConnStreams = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	return &Service{tables: tables, db: db, opts: opts, log: opts.Logger, metrics: metrics}
}

// table resolves a table name to its catalog entry and storage table.
func (s *Service) table(ctx context.Context, ref resource.Table) (TableInfo, *storage.Table, error) {
	info, err := s.tables.LookupTable(ctx, ref.Project, ref.Dataset, ref.Table)
	if err != nil {
		return TableInfo{}, nil, err
	}
	t, err := s.db.Table(info.ID)
	if err != nil {
		return TableInfo{}, nil, err
	}
	return info, t, nil
}

// CreateWriteStream creates a COMMITTED, PENDING or BUFFERED stream and
// returns its FULL view.
func (s *Service) CreateWriteStream(ctx context.Context, req *storagepb.CreateWriteStreamRequest) (*storagepb.WriteStream, error) {
	ref, err := resource.ParseTable("parent", req.GetParent())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	var typ storage.StreamType
	switch req.GetWriteStream().GetType() {
	case storagepb.WriteStream_COMMITTED:
		typ = storage.StreamCommitted
	case storagepb.WriteStream_PENDING:
		typ = storage.StreamPending
	case storagepb.WriteStream_BUFFERED:
		typ = storage.StreamBuffered
	default:
		return nil, apierr.Err(apierr.InvalidArgument("write_stream.type: must be COMMITTED, PENDING or BUFFERED, got %s", req.GetWriteStream().GetType()), "")
	}
	switch req.GetWriteStream().GetWriteMode() {
	case storagepb.WriteStream_WRITE_MODE_UNSPECIFIED, storagepb.WriteStream_INSERT:
	default:
		return nil, apierr.Err(apierr.InvalidArgument("write_stream.write_mode: unsupported value %s", req.GetWriteStream().GetWriteMode()), "")
	}
	info, t, err := s.table(ctx, ref)
	if err != nil {
		return nil, apierr.Err(err, ref.String())
	}
	si, err := t.CreateStream(ctx, typ)
	if err != nil {
		return nil, apierr.Err(err, ref.String())
	}
	s.metrics.streamsCreated.WithLabelValues(typeLabel(typ)).Inc()
	return s.writeStream(resource.WriteStream{Table: ref, ID: si.ID}, si, info, storagepb.WriteStreamView_FULL), nil
}

// GetWriteStream returns a stream's metadata. The default stream reports
// COMMITTED without create or commit time.
func (s *Service) GetWriteStream(ctx context.Context, req *storagepb.GetWriteStreamRequest) (*storagepb.WriteStream, error) {
	ref, err := resource.ParseWriteStream("name", req.GetName())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	info, t, err := s.table(ctx, ref.Table)
	if err != nil {
		return nil, apierr.Err(err, ref.Table.String())
	}
	si, err := t.Stream(ref.ID)
	if err != nil {
		return nil, apierr.Err(err, ref.String())
	}
	return s.writeStream(ref, si, info, req.GetView()), nil
}

// writeStream renders a stream in the requested view.
func (s *Service) writeStream(ref resource.WriteStream, si storage.StreamInfo, info TableInfo, view storagepb.WriteStreamView) *storagepb.WriteStream {
	ws := &storagepb.WriteStream{
		Name:      ref.String(),
		WriteMode: storagepb.WriteStream_INSERT,
		Location:  info.Location,
	}
	switch si.Type {
	case storage.StreamDefault:
		ws.Type = storagepb.WriteStream_COMMITTED
		ws.Name = ref.Table.String() + "/streams/" + resource.DefaultStream
	case storage.StreamCommitted:
		ws.Type = storagepb.WriteStream_COMMITTED
		ws.CreateTime = timestamppb.New(si.CreateTime)
		// A COMMITTED stream's rows are committed as they arrive: the
		// real service reports commit_time = create_time.
		ws.CommitTime = timestamppb.New(si.CreateTime)
	case storage.StreamPending:
		ws.Type = storagepb.WriteStream_PENDING
		ws.CreateTime = timestamppb.New(si.CreateTime)
		if !si.CommitTime.IsZero() {
			ws.CommitTime = timestamppb.New(si.CommitTime)
		}
	case storage.StreamBuffered:
		ws.Type = storagepb.WriteStream_BUFFERED
		ws.CreateTime = timestamppb.New(si.CreateTime)
	}
	if view == storagepb.WriteStreamView_FULL {
		ws.TableSchema = schema.ToStorage(info.Schema)
	}
	return ws
}

// FinalizeWriteStream stops appends to a stream and returns its row count.
func (s *Service) FinalizeWriteStream(ctx context.Context, req *storagepb.FinalizeWriteStreamRequest) (*storagepb.FinalizeWriteStreamResponse, error) {
	ref, err := resource.ParseWriteStream("name", req.GetName())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	if ref.IsDefault() {
		return nil, apierr.Err(apierr.New(codes.InvalidArgument, storagepb.StorageError_INVALID_STREAM_TYPE, ref.String(),
			"name: the _default stream cannot be finalized"), "")
	}
	_, t, err := s.table(ctx, ref.Table)
	if err != nil {
		return nil, apierr.Err(err, ref.Table.String())
	}
	n, err := t.Finalize(ctx, ref.ID)
	if err != nil {
		return nil, apierr.Err(err, ref.String())
	}
	return &storagepb.FinalizeWriteStreamResponse{RowCount: n}, nil
}

// BatchCommitWriteStreams atomically commits finalized PENDING streams of
// one table. Any stream error commits nothing and is reported in
// stream_errors, without commit_time.
func (s *Service) BatchCommitWriteStreams(ctx context.Context, req *storagepb.BatchCommitWriteStreamsRequest) (*storagepb.BatchCommitWriteStreamsResponse, error) {
	parent, err := resource.ParseTable("parent", req.GetParent())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	if len(req.GetWriteStreams()) == 0 {
		return nil, apierr.Err(apierr.InvalidArgument("write_streams: at least one stream is required"), "")
	}
	ids := make([]string, 0, len(req.GetWriteStreams()))
	names := make(map[string]string, len(req.GetWriteStreams()))
	var foreign []*storagepb.StorageError
	for i, name := range req.GetWriteStreams() {
		ref, err := resource.ParseWriteStream("write_streams["+strconv.Itoa(i)+"]", name)
		if err != nil {
			return nil, apierr.Err(err, "")
		}
		if ref.Table != parent {
			// The real service reports streams of another table as not
			// found under this parent.
			foreign = append(foreign, apierr.StreamError(name, storage.ErrStreamNotFound))
			continue
		}
		if ref.IsDefault() {
			foreign = append(foreign, apierr.StreamError(name, storage.ErrInvalidStreamType))
			continue
		}
		ids = append(ids, ref.ID)
		names[ref.ID] = name
	}
	_, t, err := s.table(ctx, parent)
	if err != nil {
		return nil, apierr.Err(err, parent.String())
	}
	if len(foreign) > 0 {
		s.metrics.commits.WithLabelValues("stream_errors").Inc()
		return &storagepb.BatchCommitWriteStreamsResponse{StreamErrors: foreign}, nil
	}
	commitTime, serrs, err := t.BatchCommit(ctx, ids)
	if err != nil {
		s.metrics.commits.WithLabelValues(apierr.Status(err, "").Code().String()).Inc()
		return nil, apierr.Err(err, parent.String())
	}
	if len(serrs) > 0 {
		out := make([]*storagepb.StorageError, len(serrs))
		for i, se := range serrs {
			out[i] = apierr.StreamError(names[se.Stream], se.Err)
		}
		s.metrics.commits.WithLabelValues("stream_errors").Inc()
		return &storagepb.BatchCommitWriteStreamsResponse{StreamErrors: out}, nil
	}
	s.metrics.commits.WithLabelValues("ok").Inc()
	return &storagepb.BatchCommitWriteStreamsResponse{CommitTime: timestamppb.New(commitTime)}, nil
}

// FlushRows makes the rows of a BUFFERED stream up to and including offset
// visible.
func (s *Service) FlushRows(ctx context.Context, req *storagepb.FlushRowsRequest) (*storagepb.FlushRowsResponse, error) {
	ref, err := resource.ParseWriteStream("write_stream", req.GetWriteStream())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	if ref.IsDefault() {
		return nil, apierr.Err(apierr.New(codes.InvalidArgument, storagepb.StorageError_INVALID_STREAM_TYPE, ref.String(),
			"write_stream: only BUFFERED streams can be flushed, not the _default stream"), "")
	}
	off := req.GetOffset().GetValue()
	if off < 0 {
		return nil, apierr.Err(apierr.InvalidArgument("offset: must not be negative, got %d", off), "")
	}
	_, t, err := s.table(ctx, ref.Table)
	if err != nil {
		return nil, apierr.Err(err, ref.Table.String())
	}
	flushed, err := t.Flush(ctx, ref.ID, off)
	if err != nil {
		return nil, apierr.Err(err, ref.String())
	}
	// The engine reports the flushed row count; the API reports the last
	// flushed offset (inclusive).
	return &storagepb.FlushRowsResponse{Offset: flushed - 1}, nil
}

func typeLabel(t storage.StreamType) string {
	switch t {
	case storage.StreamDefault:
		return "default"
	case storage.StreamCommitted:
		return "committed"
	case storage.StreamPending:
		return "pending"
	case storage.StreamBuffered:
		return "buffered"
	}
	return "unknown"
}
