package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/storage/base"
	"github.com/bqstore/bqstore/internal/storage/codec"
	"github.com/bqstore/bqstore/internal/storage/segment"
	"github.com/bqstore/bqstore/internal/storage/stream"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// Record types of the table log (see doc.go and docs/format/wal.md).
const (
	recHeader       wal.Type = 1
	recCheckpoint   wal.Type = 2
	recSchema       wal.Type = 3
	recStreamCreate wal.Type = 4
	recRows         wal.Type = 5
	recFlush        wal.Type = 6
	recFinalize     wal.Type = 7
	recBatchCommit  wal.Type = 8
	recFooter       wal.Type = 9
	recTrailer      wal.Type = 10
	recAbandon      wal.Type = 11
	recRowsSparse   wal.Type = 12
)

// isRows reports whether a frame type holds row data: ROWS (the dense
// layout, written before ROWS_SPARSE and still read) or ROWS_SPARSE (what
// the engine writes). Both decode to a rec of type recRows.
func isRows(t wal.Type) bool { return t == recRows || t == recRowsSparse }

// frameType is the frame type a live record of type t is written as.
func frameType(t wal.Type) wal.Type {
	if t == recRows {
		return recRowsSparse
	}
	return t
}

func recName(t wal.Type) string {
	switch t {
	case recHeader:
		return "HEADER"
	case recCheckpoint:
		return "CHECKPOINT"
	case recSchema:
		return "SCHEMA"
	case recStreamCreate:
		return "STREAM_CREATE"
	case recRows:
		return "ROWS"
	case recFlush:
		return "FLUSH"
	case recFinalize:
		return "FINALIZE"
	case recBatchCommit:
		return "BATCH_COMMIT"
	case recFooter:
		return "FOOTER"
	case recTrailer:
		return "TRAILER"
	case recAbandon:
		return "ABANDON"
	case recRowsSparse:
		return "ROWS_SPARSE"
	}
	return fmt.Sprintf("TYPE_%d", t)
}

// Log file format magics (the start of the HEADER payload). Format 2
// files record in every frame the offset synced before its group
// (wal.SealSynced); format 1 files (written before) record 0 and are read
// with the stricter torn-tail rule.
const (
	logMagicV1 = "BQSLOG01"
	logMagic   = "BQSLOG02"
)

// rowsTrailerLen is the fixed tail of a ROWS payload.
const rowsTrailerLen = 24

// rec is a decoded log record: what the log writer applies to the durable
// state once the record is synced, and what recovery replays.
type rec struct {
	typ           wal.Type
	stream        string
	streamType    stream.Type
	schemaVersion int
	first, rows   int64 // ROWS: first offset, row count; FLUSH: offset; FINALIZE: rows
	ids           []string
	schema        *arrow.Schema
	schemaIPC     []byte
	stats         segment.Stats
}

// encodeMeta encodes a metadata record's payload (everything but ROWS).
func (r *rec) encodeMeta() []byte {
	var e codec.Encoder
	switch r.typ {
	case recSchema:
		e.Uvarint(uint64(r.schemaVersion))
		e.Bytes(r.schemaIPC)
	case recStreamCreate:
		e.String(r.stream)
		e.Uvarint(uint64(r.streamType))
		e.Uvarint(uint64(r.schemaVersion))
	case recFlush, recFinalize:
		e.String(r.stream)
		e.Varint(r.first)
	case recBatchCommit, recAbandon:
		e.Uvarint(uint64(len(r.ids)))
		for _, id := range r.ids {
			e.String(id)
		}
	default:
		panic(fmt.Sprintf("storage: encodeMeta of %s", recName(r.typ)))
	}
	return e.Buf
}

// decodeRec decodes a record payload (ROWS, ROWS_SPARSE: without the
// Arrow data, which is decoded on read; both give a rec of type recRows).
//
// parseSchema decodes the Arrow schema of a SCHEMA record (decodeSchema;
// nil leaves it undecoded: the fuzz target exercises our decoding only,
// arrow-go's flatbuffer reader trusts its input, which the frame CRC
// protects).
func decodeRec(typ wal.Type, p []byte, parseSchema func([]byte) (*arrow.Schema, error)) (*rec, error) {
	r := &rec{typ: typ}
	if isRows(typ) {
		return decodeRowsHeader(typ, p)
	}
	d := codec.NewDecoder(p)
	switch typ {
	case recSchema:
		r.schemaVersion = d.Count(1 << 30)
		r.schemaIPC = d.Bytes()
	case recStreamCreate:
		r.stream = d.String()
		r.streamType = stream.Type(d.Count(int(stream.Buffered)))
		r.schemaVersion = d.Count(1 << 30)
	case recFlush, recFinalize:
		r.stream = d.String()
		r.first = d.Varint()
	case recBatchCommit, recAbandon:
		n := d.Count(d.Len())
		for range n {
			r.ids = append(r.ids, d.String())
		}
	default:
		return nil, fmt.Errorf("unknown record type %d", typ)
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	if typ == recSchema && parseSchema != nil {
		sc, err := parseSchema(r.schemaIPC)
		if err != nil {
			return nil, err
		}
		r.schema = sc
	}
	return r, nil
}

// A ROWS_SPARSE payload is
//
//	[Arrow IPC record batch message of the batch's present columns (those
//	with a non-null value), in column order; nothing if there is none]
//	[meta: codec(stream id, Stats.EncodeSparse: column count, present
//	columns, their zone maps), zero padded to 8]
//	[trailer: first i64, rows i64, schema version u32, meta length u32]
//
// so a batch costs what it holds: a column that is all null in it takes
// neither Arrow metadata, buffers nor a zone map, and reads back as all
// null. A ROWS payload (the dense layout, written before) is the same
// with every column in the Arrow message and a zone map per column
// (Stats.Encode).
//
// The trailer comes last so that the appender can checksum the large
// Arrow message and metadata before the offset check assigns the first
// offset (see Table.Append).

func putRowsTrailer(b []byte, first, rows int64, sv int, metaLen int) {
	binary.LittleEndian.PutUint64(b[0:], uint64(first))
	binary.LittleEndian.PutUint64(b[8:], uint64(rows))
	binary.LittleEndian.PutUint32(b[16:], uint32(sv))
	binary.LittleEndian.PutUint32(b[20:], uint32(metaLen))
}

// rowsMetaSizeHint bounds what encodeRowsMeta appends (at most three
// bytes per present column's index, the bounds of its zone map), to size
// the frame buffer once.
func rowsMetaSizeHint(streamID string, stats segment.Stats) int {
	return 64 + len(streamID) + stats.Stored()*(2*maxStatBytes+27)
}

// encodeRowsMeta appends the meta part of a ROWS_SPARSE payload.
func encodeRowsMeta(dst []byte, streamID string, stats segment.Stats) []byte {
	e := codec.Encoder{Buf: dst}
	start := len(dst)
	e.String(streamID)
	stats.EncodeSparse(&e)
	for (len(e.Buf)-start)%8 != 0 {
		e.Buf = append(e.Buf, 0)
	}
	return e.Buf
}

// splitRows returns the Arrow message and the decoded header of a ROWS
// or ROWS_SPARSE (typ) payload.
func splitRows(typ wal.Type, p []byte) (ipcMsg []byte, r *rec, err error) {
	if !isRows(typ) {
		return nil, nil, fmt.Errorf("%s is not a ROWS record", recName(typ))
	}
	if len(p) < rowsTrailerLen {
		return nil, nil, fmt.Errorf("ROWS payload of %d bytes", len(p))
	}
	t := p[len(p)-rowsTrailerLen:]
	r = &rec{typ: recRows}
	r.first = int64(binary.LittleEndian.Uint64(t[0:]))
	r.rows = int64(binary.LittleEndian.Uint64(t[8:]))
	r.schemaVersion = int(binary.LittleEndian.Uint32(t[16:]))
	metaLen := int(binary.LittleEndian.Uint32(t[20:]))
	if metaLen > len(p)-rowsTrailerLen || r.rows <= 0 || r.first < 0 {
		return nil, nil, fmt.Errorf("bad ROWS trailer (meta %d bytes, rows %d, first %d)", metaLen, r.rows, r.first)
	}
	metaStart := len(p) - rowsTrailerLen - metaLen
	d := codec.NewDecoder(p[metaStart : len(p)-rowsTrailerLen])
	r.stream = d.String()
	if typ == recRowsSparse {
		r.stats = segment.DecodeSparseStats(d, r.rows)
		if d.Err() == nil && (r.stats.Stored() == 0) != (metaStart == 0) {
			return nil, nil, fmt.Errorf("ROWS_SPARSE of %d present columns with %d bytes of Arrow data", r.stats.Stored(), metaStart)
		}
	} else {
		r.stats = segment.DecodeStatsList(d, r.rows)
	}
	if d.Err() != nil {
		return nil, nil, d.Err()
	}
	return p[:metaStart], r, nil
}

func decodeRowsHeader(typ wal.Type, p []byte) (*rec, error) {
	_, r, err := splitRows(typ, p)
	return r, err
}

// schemaVer is one version of a table's schema.
type schemaVer struct {
	version int
	ts      int64 // µs; in force from ts on
	schema  *arrow.Schema
	ipc     []byte // encodeSchema(schema)
}

// checkpoint is the durable state of a table as of a log position.
type checkpoint struct {
	tableID  string
	createTS int64
	lastTS   int64
	schemas  []schemaVer
	streams  *stream.Set
}

const checkpointVersion = 1

func (c *checkpoint) encode() []byte {
	var e codec.Encoder
	e.Uvarint(checkpointVersion)
	e.String(c.tableID)
	e.Varint(c.createTS)
	e.Varint(c.lastTS)
	e.Uvarint(uint64(len(c.schemas)))
	for _, s := range c.schemas {
		e.Uvarint(uint64(s.version))
		e.Varint(s.ts)
		e.Bytes(s.ipc)
	}
	e.Varint(c.streams.DefaultNext)
	ids := c.streams.IDs()
	e.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		st, _ := c.streams.Lookup(id)
		e.String(st.ID)
		e.Uvarint(uint64(st.Type))
		e.Uvarint(uint64(st.State))
		e.Varint(st.CreateTS)
		e.Varint(st.FinalizeTS)
		e.Varint(st.CommitTS)
		e.Uvarint(uint64(st.SchemaVersion))
		e.Varint(st.Next)
		e.Uvarint(uint64(len(st.Flushes)))
		for _, f := range st.Flushes {
			e.Varint(f.TS)
			e.Varint(f.Offset)
		}
	}
	return e.Buf
}

// decodeCheckpoint decodes a CHECKPOINT payload; parseSchema as for
// decodeRec.
func decodeCheckpoint(file string, p []byte, parseSchema func([]byte) (*arrow.Schema, error)) (*checkpoint, error) {
	d := codec.NewDecoder(p)
	if v := d.Uvarint(); d.Err() == nil && v != checkpointVersion {
		return nil, fmt.Errorf("storage: %s: checkpoint version %d: %w", file, v, base.ErrCorruption)
	}
	c := &checkpoint{tableID: d.String(), createTS: d.Varint(), lastTS: d.Varint(), streams: stream.NewSet()}
	n := d.Count(d.Len())
	for i := 0; i < n && d.Err() == nil; i++ {
		s := schemaVer{version: d.Count(1 << 30), ts: d.Varint(), ipc: d.Bytes()}
		if d.Err() != nil {
			break
		}
		if parseSchema != nil {
			sc, err := parseSchema(s.ipc)
			if err != nil {
				return nil, fmt.Errorf("storage: %s: checkpoint schema %d: %v: %w", file, s.version, err, base.ErrCorruption)
			}
			s.schema = sc
		}
		c.schemas = append(c.schemas, s)
	}
	c.streams.DefaultNext = d.Varint()
	n = d.Count(d.Len())
	for i := 0; i < n && d.Err() == nil; i++ {
		st := &stream.Stream{
			ID:            d.String(),
			Type:          stream.Type(d.Count(int(stream.Buffered))),
			State:         stream.State(d.Count(int(stream.Abandoned))),
			CreateTS:      d.Varint(),
			FinalizeTS:    d.Varint(),
			CommitTS:      d.Varint(),
			SchemaVersion: d.Count(1 << 30),
			Next:          d.Varint(),
		}
		nf := d.Count(d.Len())
		for j := 0; j < nf && d.Err() == nil; j++ {
			st.Flushes = append(st.Flushes, stream.FlushPoint{TS: d.Varint(), Offset: d.Varint()})
		}
		c.streams.Put(st)
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("storage: %s: checkpoint: %v: %w", file, err, base.ErrCorruption)
	}
	if len(c.schemas) == 0 {
		return nil, fmt.Errorf("storage: %s: checkpoint without schema: %w", file, base.ErrCorruption)
	}
	return c, nil
}

// encodeHeader is the HEADER payload: magic, table id, file number, and
// the lowest file number whose data the file holds (== fileNum except
// for a compacted file, which replaces files [from, fileNum]).
func encodeHeader(tableID string, fileNum, from int) []byte {
	var e codec.Encoder
	e.Buf = append(e.Buf, logMagic...)
	e.String(tableID)
	e.Uvarint(uint64(fileNum))
	e.Uvarint(uint64(from))
	return e.Buf
}

// headerSyncedOffsets reports whether a HEADER payload is of a format
// whose frames record synced offsets.
func headerSyncedOffsets(p []byte) bool {
	return len(p) >= len(logMagic) && string(p[:len(logMagic)]) == logMagic
}

func decodeHeader(file string, p []byte) (tableID string, fileNum, from int, err error) {
	if len(p) < len(logMagic) || (string(p[:len(logMagic)]) != logMagic && string(p[:len(logMagicV1)]) != logMagicV1) {
		return "", 0, 0, fmt.Errorf("storage: %s: bad log magic: %w", file, base.ErrCorruption)
	}
	d := codec.NewDecoder(p[len(logMagic):])
	tableID = d.String()
	fileNum = d.Count(1 << 40)
	from = d.Count(fileNum)
	if err := d.Done(); err != nil {
		return "", 0, 0, fmt.Errorf("storage: %s: header: %v: %w", file, err, base.ErrCorruption)
	}
	if from == 0 {
		return "", 0, 0, fmt.Errorf("storage: %s: header: file range starts at 0: %w", file, base.ErrCorruption)
	}
	return tableID, fileNum, from, nil
}
