package readapi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/readapi/arrowenc"
	"github.com/bqstore/bqstore/internal/readapi/avroenc"
	"github.com/bqstore/bqstore/internal/resource"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/storage"
)

// maxRowRestrictionBytes is the real service's limit on row_restriction.
const maxRowRestrictionBytes = 1 << 20

// session is one read session: an immutable plan over a pinned snapshot
// and the streams cut from it.
type session struct {
	id, name string
	project  string
	location string
	table    resource.Table
	format   storagepb.DataFormat
	created  time.Time
	expire   time.Time

	snap   *storage.Snapshot
	chunks []storage.Chunk // visible chunks, pruned by zone maps, in plan order
	prefix []int64         // prefix[i] = plan row where chunks[i] starts; prefix[len(chunks)] = total
	// bytesPerRow estimates response sizes.
	bytesPerRow int64

	readCols []int                // top-level snapshot columns read (table order)
	proj     *arrowenc.Projection // read columns -> output columns
	filter   *filter.Filter       // nil without row_restriction
	codec    arrowenc.Compression

	arrowSchema []byte // IPC Schema message of the output (ARROW)
	avroSchema  string // Avro JSON schema of the output (AVRO)
	avroOut     *schema.Schema

	mu struct {
		sync.Mutex
		streams  map[string]rowRange
		readers  int  // ReadRows calls using snap
		released bool // snap released (expired and no readers)
		expired  bool
	}
}

func (s *session) total() int64 { return s.prefix[len(s.prefix)-1] }

// acquire pins the snapshot for a reader; false once released.
func (s *session) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.released || s.mu.expired {
		return false
	}
	s.mu.readers++
	return true
}

func (s *session) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.readers--
	s.maybeReleaseLocked()
}

// release marks the session expired; the snapshot is released once the
// last reader finishes.
func (s *session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.expired = true
	s.maybeReleaseLocked()
}

// REQUIRES: s.mu held.
func (s *session) maybeReleaseLocked() {
	if s.mu.expired && s.mu.readers == 0 && !s.mu.released {
		s.mu.released = true
		s.snap.Release()
	}
}

func (s *session) stream(id string) (rowRange, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.mu.streams[id]
	return r, ok
}

func (s *session) addStream(r rowRange) string {
	id := newID()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.streams[id] = r
	return id
}

func (s *session) streamName(id string) string { return s.name + "/streams/" + id }

// CreateReadSession plans a read of a table at a snapshot.
func (s *Service) CreateReadSession(ctx context.Context, req *storagepb.CreateReadSessionRequest) (*storagepb.ReadSession, error) {
	sess, rs, err := s.createSession(ctx, req)
	if err != nil {
		return nil, apierr.Err(err, req.GetReadSession().GetTable())
	}
	s.addSession(sess)
	return rs, nil
}

func (s *Service) createSession(ctx context.Context, req *storagepb.CreateReadSessionRequest) (*session, *storagepb.ReadSession, error) {
	project, err := resource.ParseProject("parent", req.GetParent())
	if err != nil {
		return nil, nil, err
	}
	in := req.GetReadSession()
	if in == nil {
		return nil, nil, apierr.InvalidArgument("read_session: required")
	}
	tref, err := resource.ParseTable("read_session.table", in.GetTable())
	if err != nil {
		return nil, nil, err
	}
	switch in.GetDataFormat() {
	case storagepb.DataFormat_ARROW, storagepb.DataFormat_AVRO:
	default:
		return nil, nil, apierr.InvalidArgument("read_session.data_format: must be ARROW or AVRO, got %s", in.GetDataFormat())
	}
	if req.GetMaxStreamCount() < 0 {
		return nil, nil, apierr.InvalidArgument("max_stream_count: must not be negative, got %d", req.GetMaxStreamCount())
	}
	if req.GetPreferredMinStreamCount() < 0 {
		return nil, nil, apierr.InvalidArgument("preferred_min_stream_count: must not be negative, got %d", req.GetPreferredMinStreamCount())
	}
	if req.GetMaxStreamCount() > 0 && req.GetPreferredMinStreamCount() > req.GetMaxStreamCount() {
		return nil, nil, apierr.InvalidArgument("preferred_min_stream_count (%d) must not exceed max_stream_count (%d)", req.GetPreferredMinStreamCount(), req.GetMaxStreamCount())
	}
	opts := in.GetReadOptions()
	if n := len(opts.GetRowRestriction()); n > maxRowRestrictionBytes {
		return nil, nil, apierr.InvalidArgument("read_session.read_options.row_restriction exceeded maximum allowed length. Maximum bytes allowed: %d", maxRowRestrictionBytes)
	}
	codec, err := compression(opts)
	if err != nil {
		return nil, nil, err
	}

	info, err := s.tables.LookupTable(ctx, tref.Project, tref.Dataset, tref.Table)
	if err != nil {
		return nil, nil, err
	}
	tbl, err := s.db.Table(info.ID)
	if err != nil {
		return nil, nil, err
	}
	var at time.Time
	if ts := in.GetTableModifiers().GetSnapshotTime(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return nil, nil, apierr.InvalidArgument("read_session.table_modifiers.snapshot_time: %v", err)
		}
		at = ts.AsTime()
	}
	snap, err := tbl.Snapshot(at)
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			snap.Release()
		}
	}()
	bq, err := s.tables.SchemaVersion(ctx, info.ID, snap.SchemaVersion())
	if err != nil {
		return nil, nil, err
	}

	// Projection: validate the selected paths against the schema of the
	// snapshot; output keeps table order.
	paths, err := selectedPaths(bq, opts.GetSelectedFields())
	if err != nil {
		return nil, nil, err
	}
	var flt *filter.Filter
	if expr := opts.GetRowRestriction(); strings.TrimSpace(expr) != "" {
		flt, err = filter.Compile(expr, bq)
		if err != nil {
			return nil, nil, apierr.InvalidArgument("read_session.read_options.row_restriction: %v", err)
		}
	}
	readCols := readColumns(bq, paths, flt)
	full := snap.Schema()
	readFields := make([]arrow.Field, len(readCols))
	for i, c := range readCols {
		readFields[i] = full.Field(c)
	}
	readSchema := arrow.NewSchema(readFields, nil)
	proj, err := arrowenc.NewProjection(readSchema, paths)
	if err != nil {
		return nil, nil, apierr.InvalidArgument("read_session.read_options.selected_fields: %v", err)
	}

	id := newID()
	loc := strings.ToLower(info.Location)
	if loc == "" {
		loc = "us"
	}
	sess := &session{
		id: id, name: resource.SessionName(project, loc, id), project: project, location: loc,
		table: tref, format: in.GetDataFormat(), created: s.opts.Clock(),
		snap: snap, readCols: readCols, proj: proj, filter: flt, codec: codec,
	}
	sess.expire = sess.created.Add(s.opts.SessionTTL)
	sess.mu.streams = make(map[string]rowRange)

	// The plan: visible chunks, pruned by zone maps.
	var total, bytes int64
	sess.prefix = []int64{0}
	for _, c := range snap.Chunks() {
		if flt != nil && !flt.MayMatch(chunkStats(full, c)) {
			s.metrics.pruned.Inc()
			continue
		}
		sess.chunks = append(sess.chunks, c)
		total += c.NumRows
		bytes += c.Bytes
		sess.prefix = append(sess.prefix, total)
	}
	if total > 0 {
		sess.bytesPerRow = max(1, bytes/total)
	}

	out := &storagepb.ReadSession{
		Name:                       sess.name,
		ExpireTime:                 timestamppb.New(sess.expire),
		DataFormat:                 in.GetDataFormat(),
		Table:                      tref.String(),
		TableModifiers:             &storagepb.ReadSession_TableModifiers{SnapshotTime: timestamppb.New(snap.Time())},
		ReadOptions:                proto.Clone(opts).(*storagepb.ReadSession_TableReadOptions),
		EstimatedRowCount:          total,
		EstimatedTotalBytesScanned: bytes,
		TraceId:                    in.GetTraceId(),
	}
	if opts == nil {
		out.ReadOptions = nil
	}
	switch in.GetDataFormat() {
	case storagepb.DataFormat_ARROW:
		b, err := arrowenc.SchemaMessage(proj.Schema())
		if err != nil {
			return nil, nil, err
		}
		sess.arrowSchema = b
		out.Schema = &storagepb.ReadSession_ArrowSchema{ArrowSchema: &storagepb.ArrowSchema{SerializedSchema: b}}
	case storagepb.DataFormat_AVRO:
		sess.avroOut = subsetSchema(bq, paths)
		js, err := avroenc.Schema(sess.avroOut)
		if err != nil {
			return nil, nil, err
		}
		sess.avroSchema = js
		out.Schema = &storagepb.ReadSession_AvroSchema{AvroSchema: &storagepb.AvroSchema{Schema: js}}
	}

	n := streamCount(int(req.GetMaxStreamCount()), int(req.GetPreferredMinStreamCount()), total, bytes, s.opts.MinStreamBytes)
	for _, r := range cutRanges(total, max(n, 1))[:n] {
		sid := sess.addStream(r)
		out.Streams = append(out.Streams, &storagepb.ReadStream{Name: sess.streamName(sid)})
	}
	ok = true
	return sess, out, nil
}

// compression maps the Arrow serialization options.
func compression(opts *storagepb.ReadSession_TableReadOptions) (arrowenc.Compression, error) {
	switch c := opts.GetArrowSerializationOptions().GetBufferCompression(); c {
	case storagepb.ArrowSerializationOptions_COMPRESSION_UNSPECIFIED:
		return arrowenc.Uncompressed, nil
	case storagepb.ArrowSerializationOptions_LZ4_FRAME:
		return arrowenc.LZ4Frame, nil
	case storagepb.ArrowSerializationOptions_ZSTD:
		return arrowenc.ZSTD, nil
	default:
		return 0, apierr.InvalidArgument("read_session.read_options.arrow_serialization_options.buffer_compression: unsupported value %s", c)
	}
}

// selectedPaths validates selected_fields against the schema and returns
// them normalized to the schema's spelling, or every top-level column when
// none are selected.
func selectedPaths(s *schema.Schema, selected []string) ([]string, error) {
	if len(selected) == 0 {
		out := make([]string, len(s.Fields))
		for i, f := range s.Fields {
			out[i] = f.Name
		}
		return out, nil
	}
	out := make([]string, 0, len(selected))
	for _, p := range selected {
		parts := strings.Split(strings.TrimSpace(p), ".")
		fields := s.Fields
		var norm []string
		for i, part := range parts {
			var f *schema.Field
			for _, cand := range fields {
				if strings.EqualFold(cand.Name, part) {
					f = cand
					break
				}
			}
			if f == nil {
				return nil, apierr.InvalidArgument("read_session.read_options.selected_fields: field %q not found in the table schema", p)
			}
			norm = append(norm, f.Name)
			if i < len(parts)-1 {
				if f.Type != schema.Record {
					return nil, apierr.InvalidArgument("read_session.read_options.selected_fields: %q: %s is not a RECORD", p, strings.Join(norm, "."))
				}
				fields = f.Fields
			}
		}
		out = append(out, strings.Join(norm, "."))
	}
	return out, nil
}

// readColumns returns the top-level columns a session reads: those of the
// selected paths and those the filter references, in table order.
func readColumns(s *schema.Schema, paths []string, f *filter.Filter) []int {
	need := make(map[string]bool)
	for _, p := range paths {
		need[strings.ToLower(strings.SplitN(p, ".", 2)[0])] = true
	}
	if f != nil {
		for _, c := range f.Columns() {
			need[strings.ToLower(c)] = true
		}
	}
	var cols []int
	for i, fl := range s.Fields {
		if need[strings.ToLower(fl.Name)] {
			cols = append(cols, i)
		}
	}
	return cols
}

// subsetSchema is the BigQuery schema of the selected paths, in table
// order (for the Avro schema).
func subsetSchema(s *schema.Schema, paths []string) *schema.Schema {
	tree := map[string][]string{}
	for _, p := range paths {
		parts := strings.SplitN(p, ".", 2)
		k := strings.ToLower(parts[0])
		if len(parts) == 1 {
			tree[k] = nil
			continue
		}
		if sub, ok := tree[k]; !ok || sub != nil {
			tree[k] = append(tree[k], parts[1])
		}
	}
	out := &schema.Schema{}
	for _, f := range s.Fields {
		sub, ok := tree[strings.ToLower(f.Name)]
		if !ok {
			continue
		}
		c := f.Clone()
		if sub != nil {
			c.Fields = subsetSchema(&schema.Schema{Fields: f.Fields}, sub).Fields
		}
		out.Fields = append(out.Fields, c)
	}
	return out
}

// SplitReadStream cuts a stream's range at a fraction of its rows.
func (s *Service) SplitReadStream(ctx context.Context, req *storagepb.SplitReadStreamRequest) (*storagepb.SplitReadStreamResponse, error) {
	ref, err := resource.ParseReadStream("name", req.GetName())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	sess := s.session(ref.Session)
	if sess == nil {
		return nil, apierr.Err(apierr.New(codes.NotFound, 0, req.GetName(), "read stream not found: %s", req.GetName()), "")
	}
	if s.opts.Clock().After(sess.expire) {
		return nil, apierr.Err(expiredError(req.GetName(), sess.expire), "")
	}
	r, ok := sess.stream(ref.ID)
	if !ok {
		return nil, apierr.Err(apierr.New(codes.NotFound, 0, req.GetName(), "read stream not found: %s", req.GetName()), "")
	}
	f := req.GetFraction()
	if f < 0 || f >= 1 || f != f {
		return nil, apierr.Err(apierr.InvalidArgument("fraction: must be in (0.0, 1.0), got %v", f), "")
	}
	p, q, ok := splitRange(r, f)
	if !ok {
		return &storagepb.SplitReadStreamResponse{}, nil
	}
	return &storagepb.SplitReadStreamResponse{
		PrimaryStream:   &storagepb.ReadStream{Name: sess.streamName(sess.addStream(p))},
		RemainderStream: &storagepb.ReadStream{Name: sess.streamName(sess.addStream(q))},
	}, nil
}

func expiredError(name string, at time.Time) error {
	return apierr.New(codes.FailedPrecondition, 0, name, "there was an error operating on '%s': session expired at %s", name, at.UTC().Format(time.RFC3339))
}

// chunkIndex returns the chunk holding plan row pos.
func (s *session) chunkIndex(pos int64) int {
	return sort.Search(len(s.chunks), func(i int) bool { return s.prefix[i+1] > pos })
}

var _ = fmt.Sprintf
