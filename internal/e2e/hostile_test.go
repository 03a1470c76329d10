package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/bqstore/bqstore/internal/recvbudget"
	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
	"github.com/bqstore/bqstore/internal/testkit/arrowgen"
)

// The hostile client (issue 12): a seeded generator of mutated and extreme
// AppendRows requests (proto rows and descriptors, Arrow schemas and
// batches with forged lengths and offsets, wide tables, mixed row sizes)
// sent at an in-process server. It asserts that the server stays up, that
// the heap stays under a bound, that every answer is a proper status (a
// result, or an error code a client can act on: never INTERNAL or
// UNKNOWN), and that afterwards a small write and a read through both the
// Read API and tabledata.list work.
//
//	go test ./internal/e2e -run TestHostileClient -v                                  # the short run of the normal suite
//	go test ./internal/e2e -run TestHostileClient -hostile.seed=42 -v                 # replay a seed
//	go test ./internal/e2e -run TestHostileClient -hostile.soak=30m -timeout 0 -v     # a soak
var (
	hostileSeed = flag.Uint64("hostile.seed", 0, "TestHostileClient: the generator's seed (0: from the clock; the run prints it)")
	hostileN    = flag.Int("hostile.n", 100, "TestHostileClient: requests to send")
	hostileSoak = flag.Duration("hostile.soak", 0, "TestHostileClient: send requests until this much time has passed (a soak; overrides -hostile.n)")
	hostileHeap = flag.Uint64("hostile.heap", 1<<30, "TestHostileClient: bound on the heap the process (server and client) holds")
	hostileProf = flag.String("hostile.heapprofile", "", "TestHostileClient: write a heap profile here when the heap bound is exceeded")
)

// overHeap fails the test for a heap over the bound, writing a heap
// profile first if asked to.
func overHeap(t *testing.T, format string, args ...any) {
	t.Helper()
	if *hostileProf != "" {
		if f, err := os.Create(*hostileProf); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	t.Fatalf(format, args...)
}

var hostileNarrow = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType},
	{Name: "score", Type: bigquery.FloatFieldType},
}

const hostileWideColumns = 1500

// hostileMaxOpenStreams is the hostile server's --max-open-streams: the
// connection flood (rawConnFlood) fills that many 1 MiB windows.
const hostileMaxOpenStreams = 128

func hostileWide() bigquery.Schema {
	s := make(bigquery.Schema, hostileWideColumns)
	for i := range s {
		s[i] = &bigquery.FieldSchema{Name: fmt.Sprintf("c%d", i), Type: bigquery.IntegerFieldType}
	}
	return s
}

// acceptable reports whether an error code is a proper answer to a hostile
// request.
func acceptable(c codes.Code) bool {
	switch c {
	case codes.InvalidArgument, codes.ResourceExhausted, codes.OutOfRange, codes.FailedPrecondition,
		codes.NotFound, codes.AlreadyExists:
		return true
	}
	return false
}

// hostile is the generator and its view of the server.
type hostile struct {
	t      *testing.T
	e      *env
	rng    *rand.Rand
	narrow string // write stream (_default) of the narrow table
	wide   string
	// narrowDesc is a valid descriptor of the narrow table; wideDesc
	// writes c0 of the wide table only.
	narrowDesc *descriptorpb.DescriptorProto
	wideDesc   *descriptorpb.DescriptorProto
	// arrowSchema and arrowBatch are a valid Arrow writer schema and batch
	// of the narrow table.
	arrowSchema, arrowBatch []byte
	stream                  storagepb.BigQueryWrite_AppendRowsClient
	counts                  map[string]int
	okRows                  int64 // rows acknowledged on the narrow table
}

// send sends one request on the current connection (opening one if
// needed) and checks the answer; it returns the answer's code.
func (h *hostile) send(kind string, req *storagepb.AppendRowsRequest) codes.Code {
	h.t.Helper()
	if h.stream == nil {
		s, err := h.e.wc.AppendRows(h.e.ctx)
		if err != nil {
			h.t.Fatalf("%s: open AppendRows: %v", kind, err)
		}
		h.stream = s
	}
	if err := h.stream.Send(req); err != nil && !errors.Is(err, io.EOF) {
		h.t.Fatalf("%s: send: %v", kind, err)
	}
	resp, err := h.stream.Recv()
	if err != nil {
		// The server ended the connection: that must be a proper status
		// too.
		h.stream = nil
		if c := status.Code(err); !acceptable(c) {
			h.t.Fatalf("%s: connection ended with %v (%v)", kind, c, err)
		}
		return status.Code(err)
	}
	if e := resp.GetError(); e != nil {
		if c := codes.Code(e.GetCode()); !acceptable(c) {
			h.t.Fatalf("%s: answered %v: %s", kind, c, e.GetMessage())
		}
		return codes.Code(e.GetCode())
	}
	if resp.GetAppendResult() == nil {
		h.t.Fatalf("%s: answer with neither a result nor an error: %v", kind, resp)
	}
	return codes.OK
}

func (h *hostile) reset() {
	if h.stream != nil {
		_ = h.stream.CloseSend()
		for {
			if _, err := h.stream.Recv(); err != nil {
				break
			}
		}
		h.stream = nil
	}
}

func protoReq(stream string, desc *descriptorpb.DescriptorProto, rows [][]byte) *storagepb.AppendRowsRequest {
	return &storagepb.AppendRowsRequest{
		WriteStream: stream,
		Rows: &storagepb.AppendRowsRequest_ProtoRows{ProtoRows: &storagepb.AppendRowsRequest_ProtoData{
			WriterSchema: &storagepb.ProtoSchema{ProtoDescriptor: desc},
			Rows:         &storagepb.ProtoRows{SerializedRows: rows},
		}},
	}
}

func arrowReq(stream string, sch, batch []byte) *storagepb.AppendRowsRequest {
	return &storagepb.AppendRowsRequest{
		WriteStream: stream,
		Rows: &storagepb.AppendRowsRequest_ArrowRows{ArrowRows: &storagepb.AppendRowsRequest_ArrowData{
			WriterSchema: &storagepb.ArrowSchema{SerializedSchema: sch},
			Rows:         &storagepb.ArrowRecordBatch{SerializedRecordBatch: batch},
		}},
	}
}

// narrowRow encodes one valid row of the narrow table.
func narrowRow(id int64, name string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(id))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, name)
	b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, 0x3ff0000000000000)
}

func (h *hostile) validRows(n, nameLen int) [][]byte {
	rows := make([][]byte, n)
	for i := range rows {
		rows[i] = narrowRow(h.rng.Int64N(1<<40), strings.Repeat("n", nameLen))
	}
	return rows
}

// mutate changes b in one of a few hostile ways.
func (h *hostile) mutate(b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) == 0 {
		return []byte{0xff}
	}
	switch h.rng.IntN(5) {
	case 0: // flip a byte
		b[h.rng.IntN(len(b))] ^= byte(1 + h.rng.IntN(255))
	case 1: // truncate
		b = b[:h.rng.IntN(len(b))]
	case 2: // a huge length or count somewhere
		if len(b) >= 4 {
			p := h.rng.IntN(len(b) - 3)
			binary.LittleEndian.PutUint32(b[p:], h.extreme())
		}
	case 3: // a varint claiming a huge length
		p := h.rng.IntN(len(b))
		b = append(b[:p], append([]byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x0f}, b[p:]...)...)
	case 4: // garbage appended
		for i := h.rng.IntN(64); i >= 0; i-- {
			b = append(b, byte(h.rng.Uint32()))
		}
	}
	return b
}

func (h *hostile) extreme() uint32 {
	vals := []uint32{0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 20, 1 << 24, 1 << 30, 0xfffffff8}
	if h.rng.IntN(4) == 0 {
		return h.rng.Uint32()
	}
	return vals[h.rng.IntN(len(vals))]
}

// mutateDescriptor breaks a descriptor structurally.
func (h *hostile) mutateDescriptor() *descriptorpb.DescriptorProto {
	d := proto.Clone(h.narrowDesc).(*descriptorpb.DescriptorProto)
	types := []descriptorpb.FieldDescriptorProto_Type{
		descriptorpb.FieldDescriptorProto_TYPE_INT64, descriptorpb.FieldDescriptorProto_TYPE_STRING,
		descriptorpb.FieldDescriptorProto_TYPE_ENUM, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE,
		descriptorpb.FieldDescriptorProto_TYPE_GROUP, descriptorpb.FieldDescriptorProto_TYPE_BYTES,
		descriptorpb.FieldDescriptorProto_Type(h.rng.Int32N(40)),
	}
	for n := 1 + h.rng.IntN(3); n > 0; n-- {
		f := d.Field[h.rng.IntN(len(d.Field))]
		switch h.rng.IntN(6) {
		case 0:
			f.Type = types[h.rng.IntN(len(types))].Enum()
		case 1:
			f.Number = proto.Int32(int32(h.extreme()))
		case 2:
			f.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		case 3:
			f.TypeName = proto.String(strings.Repeat(".x", h.rng.IntN(100)))
		case 4: // many enum values, many enum fields
			e := &descriptorpb.EnumDescriptorProto{Name: proto.String("E")}
			for i := 0; i < 2000; i++ {
				e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(fmt.Sprintf("V%d", i)), Number: proto.Int32(int32(i))})
			}
			d.EnumType = append(d.EnumType, e)
			f.Type = descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum()
			f.TypeName = proto.String("E")
		case 5: // deep self-nesting
			m := d
			for i := 0; i < 40; i++ {
				n := &descriptorpb.DescriptorProto{Name: proto.String(fmt.Sprintf("N%d", i)), Field: []*descriptorpb.FieldDescriptorProto{{
					Name: proto.String("name"), Number: proto.Int32(2), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
					TypeName: proto.String(fmt.Sprintf("N%d", i+1)), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				}}}
				m.NestedType = append(m.NestedType, n)
				m = n
			}
			f.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
			f.TypeName = proto.String("N0")
		}
	}
	return d
}

// arrowDAG is a Schema message whose struct children point at one table
// twice, depth levels deep.
func arrowDAG(depth int) []byte {
	b := flatbuffers.NewBuilder(1024)
	name := b.CreateString("x")
	b.StartObject(2)
	b.PrependInt32Slot(0, 64, 0)
	b.PrependBoolSlot(1, true, false)
	intType := b.EndObject()
	b.StartObject(7)
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependByteSlot(2, 2, 0)
	b.PrependUOffsetTSlot(3, intType, 0)
	f := b.EndObject()
	for i := 0; i < depth; i++ {
		b.StartVector(4, 2, 4)
		b.PrependUOffsetT(f)
		b.PrependUOffsetT(f)
		children := b.EndVector(2)
		name := b.CreateString("name")
		b.StartObject(0)
		st := b.EndObject()
		b.StartObject(7)
		b.PrependUOffsetTSlot(0, name, 0)
		b.PrependByteSlot(2, 13, 0)
		b.PrependUOffsetTSlot(3, st, 0)
		b.PrependUOffsetTSlot(5, children, 0)
		f = b.EndObject()
	}
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(f)
	fields := b.EndVector(1)
	b.StartObject(4)
	b.PrependUOffsetTSlot(1, fields, 0)
	sch := b.EndObject()
	return arrowgen.IPCFrame(b, 1, sch, 0)
}

// arrowEmptyBatch is a RecordBatch message of rows rows, no columns, and
// pad bytes of body.
func arrowEmptyBatch(rows, pad int64) []byte {
	b := flatbuffers.NewBuilder(256)
	b.StartObject(5)
	b.PrependInt64Slot(0, rows, 0)
	rb := b.EndObject()
	return arrowgen.IPCFrame(b, 3, rb, pad)
}

// arrowMessages serializes rec's schema and rec as the Write API carries
// them.
func arrowMessages(t *testing.T, rec arrow.Record) (sch, batch []byte) {
	var s, full bytes.Buffer
	w := ipc.NewWriter(&s, ipc.WithSchema(rec.Schema()))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	eos := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	sch = bytes.TrimSuffix(s.Bytes(), eos)
	w = ipc.NewWriter(&full, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return sch, bytes.TrimSuffix(full.Bytes()[len(sch):], eos)
}

func narrowArrow(t *testing.T) (sch, batch []byte) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "bb", ""}, []bool{true, true, false})
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return arrowMessages(t, rec)
}

// step sends one generated request (or a short sequence) and tallies it.
func (h *hostile) step() {
	kinds := []string{
		"valid proto", "mutated proto rows", "mutated descriptor", "mixed row sizes",
		"empty rows, wide table", "one row, wide table", "forged arrow schema", "arrow DAG schema",
		"forged arrow batch", "arrow lying null count", "arrow many rows, missing columns", "valid arrow",
		"oversized request", "many missing-value keys", "concurrent oversized requests", "raw HTTP/2 abuse",
	}
	k := h.rng.IntN(len(kinds))
	if (kinds[k] == "oversized request" || kinds[k] == "concurrent oversized requests" || kinds[k] == "raw HTTP/2 abuse") && h.rng.IntN(4) != 0 {
		k = 0 // rare: 11 MB each, 6 x 15 MiB, or a raw connection
	}
	kind := kinds[k]
	h.counts[kind]++
	if h.rng.IntN(8) == 0 {
		h.reset() // sometimes a fresh connection
	}
	switch kind {
	case "valid proto":
		n := 1 + h.rng.IntN(50)
		if c := h.send(kind, protoReq(h.narrow, h.narrowDesc, h.validRows(n, h.rng.IntN(100)))); c != codes.OK {
			h.t.Fatalf("%s: %v", kind, c)
		}
		h.okRows += int64(n)
	case "mutated proto rows":
		rows := h.validRows(1+h.rng.IntN(20), h.rng.IntN(50))
		for i := h.rng.IntN(3); i >= 0; i-- {
			j := h.rng.IntN(len(rows))
			rows[j] = h.mutate(rows[j])
		}
		if h.send(kind, protoReq(h.narrow, h.narrowDesc, rows)) == codes.OK {
			h.okRows += int64(len(rows))
		}
	case "mutated descriptor":
		h.send(kind, protoReq(h.narrow, h.mutateDescriptor(), h.validRows(3, 5)))
		h.reset() // the stream's schema is now whatever the mutation made
	case "mixed row sizes":
		// Few large rows, then many small ones, on one connection.
		h.reset()
		big := h.validRows(4, 500<<10)
		small := h.validRows(5000+h.rng.IntN(5000), 2)
		for _, rows := range [][][]byte{big, small} {
			if c := h.send(kind, protoReq(h.narrow, h.narrowDesc, rows)); c != codes.OK {
				h.t.Fatalf("%s: %v", kind, c)
			}
			h.okRows += int64(len(rows))
		}
	case "empty rows, wide table":
		rows := make([][]byte, 1000+h.rng.IntN(1<<20))
		c := h.send(kind, protoReq(h.wide, h.wideDesc, rows))
		if len(rows)*hostileWideColumns > 8<<20 && c != codes.InvalidArgument {
			h.t.Fatalf("%s: %d rows answered %v", kind, len(rows), c)
		}
	case "one row, wide table":
		row := protowire.AppendTag(nil, 1, protowire.VarintType)
		row = protowire.AppendVarint(row, h.rng.Uint64()>>1)
		if c := h.send(kind, protoReq(h.wide, h.wideDesc, [][]byte{row})); c != codes.OK {
			h.t.Fatalf("%s: %v", kind, c)
		}
	case "forged arrow schema":
		h.send(kind, arrowReq(h.narrow, h.mutate(h.arrowSchema), h.arrowBatch))
		h.reset()
	case "arrow DAG schema":
		if c := h.send(kind, arrowReq(h.narrow, arrowDAG(10+h.rng.IntN(30)), h.arrowBatch)); c != codes.InvalidArgument {
			h.t.Fatalf("%s: %v", kind, c)
		}
		h.reset()
	case "forged arrow batch":
		// A forged batch may still be valid (with fewer rows, say): its
		// rows are not counted.
		h.send(kind, arrowReq(h.narrow, h.arrowSchema, h.mutate(h.arrowBatch)))
	case "arrow lying null count":
		b := bytes.Clone(h.arrowBatch)
		// The id column's FieldNode: length 3, null count 0.
		node := append(binary.LittleEndian.AppendUint64(nil, 3), make([]byte, 8)...)
		if i := bytes.Index(b, node); i >= 0 {
			binary.LittleEndian.PutUint64(b[i+8:], 1+h.rng.Uint64N(3))
		}
		if c := h.send(kind, arrowReq(h.narrow, h.arrowSchema, b)); c != codes.InvalidArgument {
			h.t.Fatalf("%s: %v", kind, c)
		}
	case "arrow many rows, missing columns":
		rows := int64(1000 + h.rng.IntN(8<<20))
		sch := arrowEmptySchema(h.t)
		h.send(kind, arrowReq(h.wide, sch, arrowEmptyBatch(rows, rows/8)))
		h.reset()
	case "valid arrow":
		if c := h.send(kind, arrowReq(h.narrow, h.arrowSchema, h.arrowBatch)); c != codes.OK {
			h.t.Fatalf("%s: %v", kind, c)
		}
		h.okRows += 3
	case "many missing-value keys":
		// Keys in another case than the columns, one per column and
		// more: resolved once per request, not per row and column.
		rows := make([][]byte, 1+h.rng.IntN(2000))
		req := protoReq(h.wide, h.wideDesc, rows)
		req.MissingValueInterpretations = map[string]storagepb.AppendRowsRequest_MissingValueInterpretation{}
		for i := 0; i < hostileWideColumns+h.rng.IntN(20000); i++ {
			v := storagepb.AppendRowsRequest_MissingValueInterpretation(1 + h.rng.IntN(2))
			req.MissingValueInterpretations[fmt.Sprintf("C%d", i)] = v
		}
		bad := h.rng.IntN(4) == 0
		if bad {
			req.MissingValueInterpretations["c0"] = storagepb.AppendRowsRequest_MissingValueInterpretation(3 + h.rng.IntN(100))
		}
		if c := h.send(kind, req); c != codes.OK && !(bad && c == codes.InvalidArgument) {
			h.t.Fatalf("%s: %v", kind, c)
		}
	case "oversized request":
		if c := h.send(kind, protoReq(h.narrow, h.narrowDesc, h.validRows(1, 11<<20))); c != codes.InvalidArgument {
			h.t.Fatalf("%s: %v", kind, c)
		}
	case "raw HTTP/2 abuse":
		h.rawAbuse(kind) // hostile_raw_test.go
	case "concurrent oversized requests":
		// Received at once on as many streams: the receive budget admits
		// them a few at a time (recvbudget).
		req := protoReq(h.narrow, h.narrowDesc, h.validRows(1, 15<<20))
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := h.e.wc.AppendRows(h.e.ctx)
				if err != nil {
					h.t.Errorf("%s: open AppendRows: %v", kind, err)
					return
				}
				defer func() { _ = s.CloseSend() }()
				if err := s.Send(req); err != nil && !errors.Is(err, io.EOF) {
					h.t.Errorf("%s: send: %v", kind, err)
					return
				}
				resp, err := s.Recv()
				if err != nil {
					h.t.Errorf("%s: %v", kind, err)
				} else if c := codes.Code(resp.GetError().GetCode()); c != codes.InvalidArgument {
					h.t.Errorf("%s: answered %v, want INVALID_ARGUMENT", kind, c)
				}
			}()
		}
		wg.Wait()
		if h.t.Failed() {
			h.t.FailNow()
		}
	}
}

// peakRSS is the process's peak resident set (VmHWM), 0 where unknown.
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb << 10
		}
	}
	return 0
}

func arrowEmptySchema(t *testing.T) []byte {
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 0)
	defer rec.Release()
	sch, _ := arrowMessages(t, rec)
	return sch
}

// heapPeak samples the heap the process holds until stop is closed.
func heapPeak(stop <-chan struct{}, peak *atomic.Uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func TestHostileClient(t *testing.T) {
	seed := *hostileSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: -hostile.seed=%d)", seed, seed)
	timeout := 5 * time.Minute
	if *hostileSoak > 0 {
		// Reading the tables back takes about as long as the soak took
		// to write them: a 22-minute soak's wide table (1,500 all-null
		// columns, ~2M rows) is ~27 GB of Arrow, more than 5 minutes on a
		// loaded machine.
		timeout += 2 * *hostileSoak
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A short receive grace: stalled raw streams are reset in a second or
	// two (rawAbuse); honest 15 MiB messages still have 15 s.
	e := dial(t, ctx, testkit.Start(t, func(c *server.Config) {
		c.ReceiveGrace = 500 * time.Millisecond
		c.MaxOpenStreams = hostileMaxOpenStreams
	}))
	narrow := e.table("hostile_narrow", hostileNarrow)
	wide := e.table("hostile_wide", hostileWide())
	narrowDesc, _ := descriptor(t, hostileNarrow)
	sch, batch := narrowArrow(t)
	h := &hostile{
		t: t, e: e, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		narrow: narrow + "/streams/_default", wide: wide + "/streams/_default",
		narrowDesc: narrowDesc,
		wideDesc: &descriptorpb.DescriptorProto{Name: proto.String("w"), Field: []*descriptorpb.FieldDescriptorProto{{
			Name: proto.String("c0"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}}},
		arrowSchema: sch, arrowBatch: batch,
		counts: map[string]int{},
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); heapPeak(stop, &peak) }()
	defer func() { close(stop); <-done }()

	start := time.Now()
	n := 0
	for ; *hostileSoak > 0 && time.Since(start) < *hostileSoak || *hostileSoak == 0 && n < *hostileN; n++ {
		h.step()
		if p := peak.Load(); p > *hostileHeap {
			overHeap(t, "after %d requests (seed %d) the heap reached %d bytes, the bound is %d", n+1, seed, p, *hostileHeap)
		}
	}
	h.reset()
	t.Logf("%d requests in %v, heap peak %d MiB, by kind: %v", n, time.Since(start).Round(time.Millisecond), peak.Load()>>20, h.counts)
	// The gRPC transport's bound, whatever the clients did (recvbudget's
	// invariant): the windows of the streams open at once, the messages
	// the receive budget admitted, a frame per connection being read.
	budget, _, bufs := e.srv.ReceiveBudget()
	if bound := int64(hostileMaxOpenStreams*(1<<20+16<<10)) + budget/recvbudget.CostFactor + 16<<20; bufs > bound {
		t.Fatalf("the gRPC transport's buffers reached %d bytes, over the bound %d (%d streams open at once, budget %d)",
			bufs, bound, hostileMaxOpenStreams, budget)
	}
	t.Logf("transport buffers peak %d MiB", bufs>>20)

	// The server is up and the tables are readable: a small write and a
	// read through the Read API and through tabledata.list.
	if c := h.send("final write", protoReq(h.narrow, h.narrowDesc, [][]byte{narrowRow(-1, "last"), narrowRow(-2, "last")})); c != codes.OK {
		t.Fatalf("final write: %v", c)
	}
	h.okRows += 2
	h.reset()
	var got int64
	sawLast := 0
	scanTable(t, e, narrow, func(rec arrow.Record) {
		got += rec.NumRows()
		ids := rec.Column(0).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			if v := ids.Value(i); v == -1 || v == -2 {
				sawLast++
			}
		}
	})
	if got < h.okRows || sawLast != 2 {
		t.Fatalf("the narrow table holds %d rows (%d acknowledged), the final write %d of 2", got, h.okRows, sawLast)
	}
	scanTable(t, e, wide, func(arrow.Record) {})
	// tabledata.list: the whole table after a short run; after a soak the
	// first and the last rows (the Read API above read every batch).
	listed := tabledataRows(t, ctx, e, "hostile_narrow", 0, 200000)
	if got <= 200000 && int64(listed) != got {
		t.Fatalf("tabledata.list returned %d rows, the Read API %d", listed, got)
	}
	if got > 200000 {
		if n := tabledataRows(t, ctx, e, "hostile_narrow", uint64(got-1000), 2000); n != 1000 {
			t.Fatalf("tabledata.list of the last 1,000 rows returned %d", n)
		}
	}
	if p := peak.Load(); p > *hostileHeap {
		overHeap(t, "reading the tables back (%d rows) took the heap to %d bytes, the bound is %d", got, p, *hostileHeap)
	}
	t.Logf("read back %d rows; heap peak %d MiB, peak RSS %d MiB (server and client)", got, peak.Load()>>20, peakRSS()>>20)
}

// scanTable reads a whole table through the Read API (Arrow, two
// streams), handing each record to f and releasing it (a soak's table does
// not fit in memory).
func scanTable(t *testing.T, e *env, tablePath string, f func(arrow.Record)) {
	sess, err := e.rc.CreateReadSession(e.ctx, &storagepb.CreateReadSessionRequest{
		Parent:         "projects/" + project,
		ReadSession:    &storagepb.ReadSession{Table: tablePath, DataFormat: storagepb.DataFormat_ARROW},
		MaxStreamCount: 2,
	})
	if err != nil {
		t.Fatalf("CreateReadSession %s: %v", tablePath, err)
	}
	schemaMsg := sess.GetArrowSchema().GetSerializedSchema()
	for _, s := range sess.GetStreams() {
		rows, err := e.rc.ReadRows(e.ctx, &storagepb.ReadRowsRequest{ReadStream: s.GetName()})
		if err != nil {
			t.Fatalf("ReadRows %s: %v", tablePath, err)
		}
		for {
			resp, err := rows.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("ReadRows %s: %v", tablePath, err)
			}
			r, err := ipc.NewReader(bytes.NewReader(append(bytes.Clone(schemaMsg), resp.GetArrowRecordBatch().GetSerializedRecordBatch()...)))
			if err != nil {
				t.Fatalf("ipc reader: %v", err)
			}
			for r.Next() {
				f(r.RecordBatch())
			}
			if err := r.Err(); err != nil {
				t.Fatalf("ipc: %v", err)
			}
			r.Release()
		}
	}
}

// tabledataRows lists up to max rows of a table from row start through
// tabledata.list and returns how many it got.
func tabledataRows(t *testing.T, ctx context.Context, e *env, table string, start uint64, max int) int {
	it := e.bq.Dataset("d").Table(table).Read(ctx)
	it.StartIndex = start
	n := 0
	for n < max {
		var row []bigquery.Value
		err := it.Next(&row)
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatalf("tabledata.list of %s from %d after %d rows: %v", table, start, n, err)
		}
		n++
	}
	return n
}
