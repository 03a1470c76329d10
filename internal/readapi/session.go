package readapi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unsafe"

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
	"github.com/bqstore/bqstore/internal/zonemap"
)

// maxRowRestrictionBytes is the real service's limit on row_restriction.
const maxRowRestrictionBytes = 1 << 20

// bigFilterBytes: row_restrictions longer than this compile at most
// maxBigCompiles at a time (Service.bigCompiles).
const (
	bigFilterBytes = 64 << 10
	maxBigCompiles = 2
)

// plan is what reading a session needs in memory: the pinned snapshot,
// the plan cut from it, the compiled filter and the encoders' schemas. A
// session holds its plan while it is being read ("open"); an idle or
// fully read session releases it (the snapshot's pin and the filter) and
// rebuilds it from its sessionMeta when read again.
type plan struct {
	meta *sessionMeta // streams change under Service.mu (SplitReadStream)

	snap   *storage.Snapshot
	chunks []storage.Chunk // the snapshot's visible chunks, in plan order
	prefix []int64         // prefix[i] = plan row where chunks[i] starts; prefix[len(chunks)] = total
	// pruned[i]: chunks[i] cannot match row_restriction (zone maps), so
	// readers skip it; nil without a filter. Pruning does not change the
	// plan row space: that is the snapshot's rows, which a re-opened
	// snapshot reproduces exactly, while zone maps change when compaction
	// merges batches.
	pruned []bool
	// scanRows and bytes estimate what the plan reads (pruned chunks
	// excluded); bytesPerRow sizes responses.
	scanRows, bytes, bytesPerRow int64

	format   storagepb.DataFormat
	readCols []int                // top-level snapshot columns read (table order)
	proj     *arrowenc.Projection // read columns -> output columns
	filter   *filter.Filter       // nil without row_restriction
	codec    arrowenc.Compression

	arrowSchema []byte // IPC Schema message of the output (ARROW)
	avroSchema  string // Avro JSON schema of the output (AVRO)
	avroOut     *schema.Schema

	// cost estimates the memory the plan holds (bytes), for
	// Options.MaxSessionMemory.
	cost int64

	// Guarded by Service.mu.
	streams map[string]rowRange
	byRange map[rowRange]string
	done    map[string]bool // streams read to their end
}

func (p *plan) total() int64 { return p.prefix[len(p.prefix)-1] }

// chunkIndex returns the chunk holding plan row pos.
func (p *plan) chunkIndex(pos int64) int {
	return sort.Search(len(p.chunks), func(i int) bool { return p.prefix[i+1] > pos })
}

// allDone reports whether every stream has been read to its end.
// REQUIRES: Service.mu held.
func (p *plan) allDone() bool {
	for id := range p.streams {
		if !p.done[id] {
			return false
		}
	}
	return true
}

func streamName(sessionName, id string) string { return sessionName + "/streams/" + id }

// CreateReadSession plans a read of a table at a snapshot.
func (s *Service) CreateReadSession(ctx context.Context, req *storagepb.CreateReadSessionRequest) (*storagepb.ReadSession, error) {
	p, rs, err := s.createSession(ctx, req)
	if err != nil {
		return nil, apierr.Err(err, req.GetReadSession().GetTable())
	}
	if err := s.addSession(p); err != nil {
		return nil, apierr.Err(err, req.GetReadSession().GetTable())
	}
	return rs, nil
}

// createSession validates the request, takes the snapshot and builds the
// session's plan and first streams.
func (s *Service) createSession(ctx context.Context, req *storagepb.CreateReadSessionRequest) (*plan, *storagepb.ReadSession, error) {
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
	if _, err := compression(opts.GetArrowSerializationOptions().GetBufferCompression()); err != nil {
		return nil, nil, err
	}
	// Refuse early when the project is at its cap (addSession checks
	// again, under the lock).
	if err := s.checkProjectCap(project); err != nil {
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
	loc := strings.ToLower(info.Location)
	if loc == "" {
		loc = "us"
	}
	meta := &sessionMeta{
		ID: newID(), Project: project, Location: loc, Table: tref.String(), TableID: info.ID,
		Format: in.GetDataFormat().String(), Created: s.opts.Clock().UTC(),
		SnapshotMicros: snap.Time().UnixMicro(),
		SelectedFields: opts.GetSelectedFields(), RowRestriction: opts.GetRowRestriction(),
		Compression: opts.GetArrowSerializationOptions().GetBufferCompression().String(),
	}
	meta.Expire = meta.Created.Add(s.opts.SessionTTL)
	p, err := s.buildPlan(ctx, meta, snap)
	if err != nil {
		snap.Release()
		return nil, nil, err
	}
	meta.Rows = p.total()

	// Streams divide the plan rows, pruned or not; as the real service
	// says, limits apply to pre-filter rows, so a filter can leave streams
	// lopsided. Nothing to scan: no streams.
	n := 0
	if p.scanRows > 0 {
		n = streamCount(int(req.GetMaxStreamCount()), int(req.GetPreferredMinStreamCount()), p.total(), p.bytes, s.opts.MinStreamBytes)
	}
	name := resource.SessionName(project, loc, meta.ID)
	out := &storagepb.ReadSession{
		Name:                       name,
		ExpireTime:                 timestamppb.New(meta.Expire),
		DataFormat:                 in.GetDataFormat(),
		Table:                      tref.String(),
		TableModifiers:             &storagepb.ReadSession_TableModifiers{SnapshotTime: timestamppb.New(snap.Time())},
		EstimatedRowCount:          p.scanRows,
		EstimatedTotalBytesScanned: p.bytes,
		TraceId:                    in.GetTraceId(),
	}
	if opts != nil {
		out.ReadOptions = proto.Clone(opts).(*storagepb.ReadSession_TableReadOptions)
	}
	switch p.format {
	case storagepb.DataFormat_ARROW:
		out.Schema = &storagepb.ReadSession_ArrowSchema{ArrowSchema: &storagepb.ArrowSchema{SerializedSchema: p.arrowSchema}}
	case storagepb.DataFormat_AVRO:
		out.Schema = &storagepb.ReadSession_AvroSchema{AvroSchema: &storagepb.AvroSchema{Schema: p.avroSchema}}
	}
	for _, r := range cutRanges(p.total(), max(n, 1))[:n] {
		id := p.addStream(r)
		out.Streams = append(out.Streams, &storagepb.ReadStream{Name: streamName(name, id)})
	}
	return p, out, nil
}

// addStream registers a stream over r (the existing one when a stream
// over r exists) and returns its id. REQUIRES: Service.mu held, or p not
// yet shared.
func (p *plan) addStream(r rowRange) string {
	if id, ok := p.byRange[r]; ok {
		return id
	}
	id := newID()
	p.streams[id] = r
	p.byRange[r] = id
	p.meta.Streams = append(p.meta.Streams, streamMeta{ID: id, Start: r.start, End: r.end})
	return id
}

// buildPlan builds a session's plan over snap (which it takes over) from
// its metadata: the projection, the filter, the plan and the schemas.
// Every validation error here is the caller's (at creation) or a sign
// that the table changed under a persisted session (at re-open).
func (s *Service) buildPlan(ctx context.Context, meta *sessionMeta, snap *storage.Snapshot) (*plan, error) {
	bq, err := s.tables.SchemaVersion(ctx, meta.TableID, snap.SchemaVersion())
	if err != nil {
		return nil, err
	}
	codec, err := compression(storagepb.ArrowSerializationOptions_CompressionCodec(storagepb.ArrowSerializationOptions_CompressionCodec_value[meta.Compression]))
	if err != nil {
		return nil, err
	}
	// Projection: validate the selected paths against the schema of the
	// snapshot; output keeps table order.
	paths, err := selectedPaths(bq, meta.SelectedFields)
	if err != nil {
		return nil, err
	}
	var flt *filter.Filter
	if expr := meta.RowRestriction; strings.TrimSpace(expr) != "" {
		if len(expr) > bigFilterBytes {
			// Compiling takes about 90 bytes per byte of text while it
			// runs: a few at a time bound that.
			select {
			case s.bigCompiles <- struct{}{}:
				defer func() { <-s.bigCompiles }()
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		flt, err = filter.Compile(expr, bq)
		if err != nil {
			return nil, apierr.InvalidArgument("read_session.read_options.row_restriction: %v", err)
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
		return nil, apierr.InvalidArgument("read_session.read_options.selected_fields: %v", err)
	}
	p := &plan{
		meta: meta, snap: snap, format: storagepb.DataFormat(storagepb.DataFormat_value[meta.Format]),
		readCols: readCols, proj: proj, filter: flt, codec: codec,
		streams: map[string]rowRange{}, byRange: map[rowRange]string{}, done: map[string]bool{},
	}
	// The plan: the visible chunks; those the zone maps rule out are
	// marked, not removed.
	var total int64
	all := snap.Chunks()
	p.chunks = all
	p.prefix = make([]int64, 1, len(all)+1)
	if flt != nil {
		p.pruned = make([]bool, len(all))
	}
	for i, c := range all {
		total += c.NumRows
		p.prefix = append(p.prefix, total)
		if flt != nil && !flt.MayMatch(zonemap.ChunkStats(full, c)) {
			s.metrics.pruned.Inc()
			p.pruned[i] = true
			continue
		}
		p.scanRows += c.NumRows
		p.bytes += c.Bytes
	}
	if p.scanRows > 0 {
		p.bytesPerRow = max(1, p.bytes/p.scanRows)
	}
	switch p.format {
	case storagepb.DataFormat_ARROW:
		if p.arrowSchema, err = arrowenc.SchemaMessage(proj.Schema()); err != nil {
			return nil, err
		}
	case storagepb.DataFormat_AVRO:
		p.avroOut = subsetSchema(bq, paths)
		if p.avroSchema, err = avroenc.Schema(p.avroOut); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("readapi: session %s: data format %q", meta.ID, meta.Format)
	}
	for _, st := range meta.Streams {
		r := rowRange{st.Start, st.End}
		p.streams[st.ID] = r
		p.byRange[r] = st.ID
	}
	// What the plan holds: the snapshot's chunk list, which the plan
	// shares (a Chunk struct each), a prefix sum and a pruning flag per
	// chunk, the compiled filter (measured: at most about 10x its text,
	// TestLargeInListMemory) and the schemas and streams. The zone maps
	// the chunks point at are not the session's: they belong to the
	// table's batch index, shared by every snapshot (a snapshot keeps
	// the pre-compaction ones alive until it is released, when
	// its session closes: idle or read to the end). TestPlanCostWideTable.
	chunkCost := int64(unsafe.Sizeof(storage.Chunk{})) + 8 + 1
	p.cost = 4096 + int64(len(all))*chunkCost +
		16*int64(len(meta.RowRestriction)) + int64(len(p.arrowSchema)+len(p.avroSchema)) +
		int64(len(meta.Streams))*128
	return p, nil
}

// compression maps the Arrow serialization options.
func compression(c storagepb.ArrowSerializationOptions_CompressionCodec) (arrowenc.Compression, error) {
	switch c {
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

// SplitReadStream cuts a stream's range at a fraction of its rows. Like
// the real service, it answers an empty response (the stream "can no
// longer be split") when the stream is too small or the session holds
// Options.MaxStreamsPerSession streams; splitting a stream at a point
// where it was split before returns the same two streams.
func (s *Service) SplitReadStream(ctx context.Context, req *storagepb.SplitReadStreamRequest) (*storagepb.SplitReadStreamResponse, error) {
	ref, err := resource.ParseReadStream("name", req.GetName())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	f := req.GetFraction()
	if f < 0 || f >= 1 || f != f {
		return nil, apierr.Err(apierr.InvalidArgument("fraction: must be in (0.0, 1.0), got %v", f), "")
	}
	sess, p, err := s.open(ctx, ref.Session, req.GetName())
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	defer s.close(sess, "")
	resp, err := s.split(sess, p, ref.ID, req.GetName(), f)
	if err != nil {
		return nil, apierr.Err(err, "")
	}
	return resp, nil
}

func (s *Service) split(sess *session, p *plan, id, name string, f float64) (*storagepb.SplitReadStreamResponse, error) {
	// persistMu orders the file writes as the changes they record.
	sess.persistMu.Lock()
	defer sess.persistMu.Unlock()
	s.mu.Lock()
	r, ok := p.streams[id]
	if !ok {
		s.mu.Unlock()
		return nil, apierr.New(codes.NotFound, 0, name, "read stream not found: %s", name)
	}
	a, b, ok := splitRange(r, f)
	if !ok {
		s.mu.Unlock()
		return &storagepb.SplitReadStreamResponse{}, nil
	}
	_, hasA := p.byRange[a]
	_, hasB := p.byRange[b]
	grow := 0
	if !hasA {
		grow++
	}
	if !hasB {
		grow++
	}
	if len(p.streams)+grow > s.opts.MaxStreamsPerSession {
		s.mu.Unlock()
		return &storagepb.SplitReadStreamResponse{}, nil
	}
	ida, idb := p.addStream(a), p.addStream(b)
	var meta *sessionMeta
	if grow > 0 && s.store != nil {
		meta = p.meta.clone()
	}
	s.mu.Unlock()
	if meta != nil {
		if err := s.store.put(meta); err != nil {
			s.log.Error("persist read session", "session", sess.name, "err", err)
			return nil, err
		}
	}
	return &storagepb.SplitReadStreamResponse{
		PrimaryStream:   &storagepb.ReadStream{Name: streamName(sess.name, ida)},
		RemainderStream: &storagepb.ReadStream{Name: streamName(sess.name, idb)},
	}, nil
}

func expiredError(name string, at time.Time) error {
	return apierr.New(codes.FailedPrecondition, 0, name, "there was an error operating on '%s': session expired at %s", name, at.UTC().Format(time.RFC3339))
}
