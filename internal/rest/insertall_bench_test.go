package rest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/schema/protorows"
)

// BenchmarkInsertAllDecode measures what an insertAll request costs before
// the engine: parsing the body, JSON rows to proto rows, proto rows to one
// Arrow batch (1,000 rows of 6 columns a request).
//
//	go test -run '^$' -bench BenchmarkInsertAllDecode -benchmem ./internal/rest
func BenchmarkInsertAllDecode(b *testing.B) {
	sch := &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer, Mode: schema.Required},
		{Name: "name", Type: schema.String},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "amount", Type: schema.Numeric},
		{Name: "tags", Type: schema.String, Mode: schema.Repeated},
		{Name: "rec", Type: schema.Record, Fields: []*schema.Field{{Name: "x", Type: schema.Integer}}},
	}}
	var body bytes.Buffer
	body.WriteString(`{"rows":[`)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"insertId":"id-%d","json":{"id":%d,"name":"name %d","ts":"2026-11-30T12:00:00.%06dZ","amount":"%d.25","tags":["a","b"],"rec":{"x":%d}}}`, i, i, i, i, i, i)
	}
	body.WriteString(`]}`)
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		req, err := parseInsertAll(body.Bytes(), pathParams{project: "p", dataset: "d", table: "t"})
		if err != nil {
			b.Fatal(err)
		}
		conv, err := newRowConverter(sch, false)
		if err != nil {
			b.Fatal(err)
		}
		var buf []byte
		rows := make([][]byte, 0, len(req.rows))
		for _, r := range req.rows {
			start := len(buf)
			if buf, err = conv.mapper.Append(buf, r.json); err != nil {
				b.Fatal(err)
			}
			rows = append(rows, buf[start:len(buf):len(buf)])
		}
		rec, rowErrs, err := conv.decoder.Decode(rows, protorows.MissingValues{Default: protorows.DefaultValue})
		if err != nil || len(rowErrs) > 0 {
			b.Fatal(err, rowErrs)
		}
		rec.Release()
	}
}

// BenchmarkInsertAllConverter measures the per-request set-up: the JSON
// mapper and the proto row decoder for a 6-column schema.
//
//	go test -run '^$' -bench BenchmarkInsertAllConverter -benchmem ./internal/rest
func BenchmarkInsertAllConverter(b *testing.B) {
	sch := &schema.Schema{Fields: []*schema.Field{
		{Name: "id", Type: schema.Integer, Mode: schema.Required},
		{Name: "name", Type: schema.String},
		{Name: "ts", Type: schema.Timestamp},
		{Name: "amount", Type: schema.Numeric},
		{Name: "tags", Type: schema.String, Mode: schema.Repeated},
		{Name: "rec", Type: schema.Record, Fields: []*schema.Field{{Name: "x", Type: schema.Integer}}},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newRowConverter(sch, false); err != nil {
			b.Fatal(err)
		}
	}
}
