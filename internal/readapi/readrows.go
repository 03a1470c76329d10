package readapi

import (
	"slices"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/readapi/arrowenc"
	"github.com/bqstore/bqstore/internal/readapi/avroenc"
	"github.com/bqstore/bqstore/internal/resource"
)

// ReadRows streams the rows of a read stream from an offset (a row number
// within the stream's output, after row_restriction). Responses carry at
// most Options.MaxResponseBytes of rows each; memory stays bounded by one
// response whatever the table size.
func (s *Service) ReadRows(req *storagepb.ReadRowsRequest, srv storagepb.BigQueryRead_ReadRowsServer) error {
	name := req.GetReadStream()
	ref, err := resource.ParseReadStream("read_stream", name)
	if err != nil {
		return apierr.Err(err, "")
	}
	if req.GetOffset() < 0 {
		return apierr.Err(apierr.InvalidArgument("offset: must not be negative, got %d", req.GetOffset()), "")
	}
	sess, p, err := s.open(srv.Context(), ref.Session, name)
	if err != nil {
		return apierr.Err(err, "")
	}
	s.mu.Lock()
	r, ok := p.streams[ref.ID]
	s.mu.Unlock()
	if !ok {
		s.close(sess, "")
		return apierr.Err(apierr.New(codes.NotFound, 0, name, "read stream not found: %s", name), "")
	}
	rd := &streamReader{s: s, sess: p, srv: srv, r: r, name: name}
	if err := rd.run(req.GetOffset()); err != nil {
		s.close(sess, "")
		st := apierr.Status(err, name)
		if c := st.Code(); c == codes.Internal || c == codes.DataLoss || c == codes.Unavailable {
			s.log.Error("read rows failed", "stream", name, "err", err)
		}
		return st.Err()
	}
	s.close(sess, ref.ID)
	return nil
}

// streamReader sends one stream's rows.
type streamReader struct {
	s     *Service
	sess  *plan
	srv   storagepb.BigQueryRead_ReadRowsServer
	r     rowRange
	name  string
	sent  bool // a response was sent (the schema goes on the first)
	arrow *arrowenc.Encoder
	avro  *avroenc.Encoder
	buf   []byte
}

func (rd *streamReader) run(offset int64) error {
	sess := rd.sess
	pos := rd.r.start
	if sess.filter == nil {
		// Without a filter, output rows are plan rows.
		if offset > rd.r.len() {
			return apierr.New(codes.OutOfRange, 0, rd.name, "offset %d is beyond the end of the stream (%d rows)", offset, rd.r.len())
		}
		pos += offset
		offset = 0
	}
	maxRows := max(1, rd.s.opts.MaxResponseBytes/max(1, sess.bytesPerRow))
	ctx := rd.srv.Context()
	for pos < rd.r.end {
		if err := ctx.Err(); err != nil {
			return err
		}
		ci := sess.chunkIndex(pos)
		if sess.pruned != nil && sess.pruned[ci] {
			pos = min(rd.r.end, sess.prefix[ci+1]) // no row can match
			continue
		}
		c := sess.chunks[ci]
		cStart := sess.prefix[ci]
		end := min(rd.r.end, sess.prefix[ci+1], pos+maxRows)
		rec, err := sess.snap.ReadChunk(ctx, c, pos-cStart, end-cStart, sess.readCols)
		if err != nil {
			return err
		}
		startFrac := rd.progress(pos)
		pos = end
		if sess.filter != nil {
			// Keep the rows where row_restriction is TRUE.
			filtered, err := sess.filter.Apply(ctx, rec)
			rec.Release()
			if err != nil {
				return err
			}
			rec = filtered
			if offset > 0 {
				// Skip output rows before the requested offset.
				k := min(offset, rec.NumRows())
				offset -= k
				sliced := rec.NewSlice(k, rec.NumRows())
				rec.Release()
				rec = sliced
			}
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		out, err := sess.proj.Record(rec)
		rec.Release()
		if err != nil {
			return err
		}
		err = rd.send(out, startFrac, rd.progress(pos))
		out.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (rd *streamReader) progress(pos int64) float64 {
	if rd.r.len() == 0 {
		return 1
	}
	return float64(pos-rd.r.start) / float64(rd.r.len())
}

func (rd *streamReader) send(rec arrow.Record, start, end float64) error {
	sess := rd.sess
	resp := &storagepb.ReadRowsResponse{
		RowCount:      rec.NumRows(),
		Stats:         &storagepb.StreamStats{Progress: &storagepb.StreamStats_Progress{AtResponseStart: start, AtResponseEnd: end}},
		ThrottleState: &storagepb.ThrottleState{},
	}
	var err error
	switch sess.format {
	case storagepb.DataFormat_ARROW:
		if rd.arrow == nil {
			if rd.arrow, err = arrowenc.NewEncoder(sess.proj.Schema(), memory.DefaultAllocator); err != nil {
				return err
			}
		}
		// The message is encoded into the stream's buffer, reused from
		// one response to the next (as the Avro branch does): Send has
		// copied it into gRPC's own buffers when it returns, and a fresh
		// (zeroed) buffer of up to MaxResponseBytes per response cost
		// about a tenth of the read path's CPU (docs/design/cpu.md, R1).
		if sess.codec == arrowenc.Uncompressed {
			rd.buf = slices.Grow(rd.buf[:0], arrowenc.EstimateSize(rec))
		}
		b, err := rd.arrow.AppendRecordBatchMessage(rd.buf[:0], rec, sess.codec)
		if err != nil {
			return err
		}
		rd.buf = b
		resp.Rows = &storagepb.ReadRowsResponse_ArrowRecordBatch{ArrowRecordBatch: &storagepb.ArrowRecordBatch{
			SerializedRecordBatch: b, RowCount: rec.NumRows(),
		}}
		if !rd.sent {
			resp.Schema = &storagepb.ReadRowsResponse_ArrowSchema{ArrowSchema: &storagepb.ArrowSchema{SerializedSchema: sess.arrowSchema}}
		}
		rd.s.metrics.bytes.Add(float64(len(b)))
	case storagepb.DataFormat_AVRO:
		if rd.avro == nil {
			rd.avro = avroenc.NewEncoder(sess.avroOut)
		}
		rd.buf, err = rd.avro.Encode(rec, rd.buf[:0])
		if err != nil {
			return err
		}
		resp.Rows = &storagepb.ReadRowsResponse_AvroRows{AvroRows: &storagepb.AvroRows{
			SerializedBinaryRows: rd.buf, RowCount: rec.NumRows(),
		}}
		if !rd.sent {
			resp.Schema = &storagepb.ReadRowsResponse_AvroSchema{AvroSchema: &storagepb.AvroSchema{Schema: sess.avroSchema}}
		}
		rd.s.metrics.bytes.Add(float64(len(rd.buf)))
	}
	rd.sent = true
	rd.s.metrics.rows.Add(float64(rec.NumRows()))
	return rd.srv.Send(resp)
}
