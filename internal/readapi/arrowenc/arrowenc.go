// Package arrowenc produces the Arrow bytes of the Read API: the
// IPC-encapsulated Schema message of ReadSession.arrow_schema and the
// RecordBatch messages of ReadRowsResponse.arrow_record_batch, with the
// LZ4_FRAME and ZSTD buffer compression of
// ArrowSerializationOptions.buffer_compression. It also projects records to
// the session's selected_fields without copying column data.
//
// Wire contract (what clients do with the bytes): the Go bigquery client and
// pyarrow concatenate serialized_schema and serialized_record_batch and read
// the result with an IPC stream reader. So the schema bytes are one
// encapsulated message (continuation marker 0xFFFFFFFF, little-endian
// metadata length, flatbuffer Message, padding to 8 bytes) with no
// end-of-stream marker, and each batch is one encapsulated RecordBatch
// message followed by its body. Compressed bodies use Arrow's per-buffer
// framing: an int64 uncompressed length (or -1 for a buffer stored raw)
// followed by the codec's frame.
//
// Only dictionary-free schemas are supported: the Read API never sends
// dictionary batches, and a client reading schema+batch could not resolve
// one.
//
// Concurrency: an Encoder is not safe for concurrent use; a ReadRows stream
// owns one. SchemaMessage and the projection functions are pure.
package arrowenc

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Compression is the buffer compression of a RecordBatch message. The values
// are those of the Storage API's
// ArrowSerializationOptions.CompressionCodec enum, so the API layer converts
// with Compression(opts.GetBufferCompression()).
type Compression int32

// The codecs of ArrowSerializationOptions.buffer_compression.
const (
	Uncompressed Compression = 0 // COMPRESSION_UNSPECIFIED
	LZ4Frame     Compression = 1 // LZ4_FRAME
	ZSTD         Compression = 2 // ZSTD
)

func (c Compression) String() string {
	switch c {
	case Uncompressed:
		return "UNCOMPRESSED"
	case LZ4Frame:
		return "LZ4_FRAME"
	case ZSTD:
		return "ZSTD"
	}
	return fmt.Sprintf("Compression(%d)", int32(c))
}

// ErrDictionary is returned for a schema that contains a dictionary-encoded
// field, which the Read API format cannot carry.
var ErrDictionary = errors.New("arrowenc: dictionary-encoded fields are not supported")

// SchemaMessage returns the IPC-encapsulated Schema message of s, the bytes of
// ReadSession.arrow_schema.serialized_schema. Field and schema metadata (the
// google:sqlType extension names) are carried as they are.
func SchemaMessage(s *arrow.Schema) ([]byte, error) {
	if s == nil {
		return nil, errors.New("arrowenc: nil schema")
	}
	if err := checkNoDictionary(s); err != nil {
		return nil, err
	}
	p := ipc.GetSchemaPayload(s, memory.DefaultAllocator)
	defer p.Release()
	var buf bytes.Buffer
	if _, err := p.WritePayload(&buf); err != nil {
		return nil, fmt.Errorf("arrowenc: writing schema message: %w", err)
	}
	return buf.Bytes(), nil
}

func checkNoDictionary(s *arrow.Schema) error {
	for _, f := range s.Fields() {
		if err := checkTypeNoDictionary(f.Name, f.Type); err != nil {
			return err
		}
	}
	return nil
}

func checkTypeNoDictionary(path string, t arrow.DataType) error {
	switch t := t.(type) {
	case *arrow.DictionaryType:
		return fmt.Errorf("%w: field %q", ErrDictionary, path)
	case arrow.NestedType:
		for _, c := range t.Fields() {
			if err := checkTypeNoDictionary(path+"."+c.Name, c.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// Encoder writes the RecordBatch messages of one schema. It keeps one IPC
// writer per codec so that compressor state (notably zstd's encoder, which is
// expensive to create) is reused across batches.
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	schema *arrow.Schema
	mem    memory.Allocator
	// writers[c] encodes with codec c; created on first use. A writer that
	// failed is dropped (its error is sticky) and recreated on the next call.
	writers [3]*ipc.Writer
	sinks   [3]*payloadSink
}

// NewEncoder returns an Encoder for records of schema s. mem allocates the
// scratch buffers of compression and of re-based offsets of sliced arrays;
// nil means memory.DefaultAllocator.
func NewEncoder(s *arrow.Schema, mem memory.Allocator) (*Encoder, error) {
	if s == nil {
		return nil, errors.New("arrowenc: nil schema")
	}
	if err := checkNoDictionary(s); err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &Encoder{schema: s, mem: mem}, nil
}

// Schema returns the schema the Encoder was made for.
func (e *Encoder) Schema() *arrow.Schema { return e.schema }

// RecordBatchMessage returns the IPC RecordBatch message (metadata and body,
// without the schema) of rec, the bytes of
// ArrowRecordBatch.serialized_record_batch. The returned slice is newly
// allocated and owned by the caller. rec may be a slice of a larger record
// (non-zero offsets): only its rows are written.
func (e *Encoder) RecordBatchMessage(rec arrow.Record, codec Compression) ([]byte, error) {
	var dst []byte
	if codec == Uncompressed && rec != nil {
		dst = make([]byte, 0, EstimateSize(rec))
	}
	return e.AppendRecordBatchMessage(dst, rec, codec)
}

// AppendRecordBatchMessage is RecordBatchMessage writing into dst: it appends
// the message to dst and returns the extended slice, so a caller that owns
// its buffer can reuse it across batches.
func (e *Encoder) AppendRecordBatchMessage(dst []byte, rec arrow.Record, codec Compression) ([]byte, error) {
	if rec == nil {
		return dst, errors.New("arrowenc: nil record")
	}
	if codec < Uncompressed || codec > ZSTD {
		return dst, fmt.Errorf("arrowenc: unknown buffer compression %d", int32(codec))
	}
	if !rec.Schema().Equal(e.schema) {
		// A RecordBatch message carries no field names or metadata: a
		// record whose columns have the encoder's types is written under
		// the encoder's schema.
		if !SameLayout(rec.Schema(), e.schema) {
			return dst, fmt.Errorf("arrowenc: record schema %s does not match the encoder's schema %s", rec.Schema(), e.schema)
		}
		rec = array.NewRecord(e.schema, rec.Columns(), rec.NumRows())
		defer rec.Release()
	}
	w, sink := e.writer(codec)
	sink.dst = dst
	err := w.Write(rec)
	out := sink.dst
	sink.dst = nil
	if err != nil {
		// The ipc.Writer's error is sticky: start afresh next time.
		e.writers[codec] = nil
		e.sinks[codec] = nil
		return dst, fmt.Errorf("arrowenc: encoding record batch: %w", err)
	}
	return out, nil
}

func (e *Encoder) writer(codec Compression) (*ipc.Writer, *payloadSink) {
	if w := e.writers[codec]; w != nil {
		return w, e.sinks[codec]
	}
	sink := &payloadSink{}
	opts := []ipc.Option{ipc.WithSchema(e.schema), ipc.WithAllocator(e.mem)}
	switch codec {
	case LZ4Frame:
		opts = append(opts, ipc.WithLZ4())
	case ZSTD:
		opts = append(opts, ipc.WithZstd())
	}
	w := ipc.NewWriterWithPayloadWriter(sink, opts...)
	e.writers[codec], e.sinks[codec] = w, sink
	return w, sink
}

// payloadSink receives the payloads of an ipc.Writer. The writer emits the
// schema payload once, before the first record batch, then exactly one
// payload per record (the schema has no dictionaries). The schema payload is
// dropped: the Read API sends it once, in the session.
type payloadSink struct {
	schemaSeen bool
	dst        []byte
}

func (s *payloadSink) Start() error { return nil }
func (s *payloadSink) Close() error { return nil }

func (s *payloadSink) WritePayload(p ipc.Payload) error {
	if !s.schemaSeen {
		s.schemaSeen = true
		return nil
	}
	w := appendWriter{dst: &s.dst}
	_, err := p.WritePayload(w)
	return err
}

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ dst *[]byte }

func (w appendWriter) Write(p []byte) (int, error) {
	*w.dst = append(*w.dst, p...)
	return len(p), nil
}

// SameLayout reports whether records of schemas a and b have the same
// column types (and so the same IPC body), ignoring field names, nullability
// and metadata at the top level.
func SameLayout(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

// EstimateSize returns an upper bound of the uncompressed body size of rec's
// message plus room for its metadata: the sizes of all buffers reachable from
// its columns (the whole buffers, even for slices), padded, plus 1 KiB per
// column for the flatbuffer header. Used to size destination buffers.
func EstimateSize(rec arrow.Record) int {
	n := 1024
	for _, c := range rec.Columns() {
		n += 1024 + dataSize(c.Data())
	}
	return n
}

func dataSize(d arrow.ArrayData) int {
	n := 0
	for _, b := range d.Buffers() {
		if b != nil {
			n += (b.Len() + 63) &^ 63
		}
	}
	for _, c := range d.Children() {
		n += dataSize(c)
	}
	return n
}
