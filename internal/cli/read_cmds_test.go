package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/cockroachdb/datadriven"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/bqstore/bqstore/internal/cli"
	"github.com/bqstore/bqstore/internal/faults"
	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// readSchema is the table the read verbs are tested on.
var readSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType},
	{Name: "score", Type: bigquery.FloatFieldType},
	{Name: "amount", Type: bigquery.NumericFieldType},
	{Name: "ts", Type: bigquery.TimestampFieldType},
	{Name: "day", Type: bigquery.DateFieldType},
	{Name: "tags", Type: bigquery.StringFieldType, Repeated: true},
	{Name: "rec", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
		{Name: "a", Type: bigquery.StringFieldType},
		{Name: "b", Type: bigquery.BooleanFieldType},
	}},
}

// flatColumns are readSchema's columns a CSV can hold.
const flatColumns = "id,name,score,amount,ts,day"

// readServer starts a server with table local:d.t holding n rows of
// readSchema (row i: id i, name "name-i" or NULL every 7th row, ...).
func readServer(t *testing.T, n int, mutate ...func(*server.Config)) *testkit.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv := testkit.Start(t, mutate...)
	bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(srv.HTTPAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := managedwriter.NewClient(ctx, "local", testkit.GRPCOptions(srv.GRPCAddr())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mw.Close(); bq.Close() })
	if err := bq.Dataset("d").Create(ctx, &bigquery.DatasetMetadata{}); err != nil {
		t.Fatal(err)
	}
	if err := bq.Dataset("d").Table("t").Create(ctx, &bigquery.TableMetadata{Schema: readSchema}); err != nil {
		t.Fatal(err)
	}
	ts, err := adapt.BQSchemaToStorageTableSchema(readSchema)
	if err != nil {
		t.Fatal(err)
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(ts, "root")
	if err != nil {
		t.Fatal(err)
	}
	md := d.(protoreflect.MessageDescriptor)
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := mw.NewManagedStream(ctx, managedwriter.WithDestinationTable("projects/local/datasets/d/tables/t"), managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	var results []*managedwriter.AppendResult
	var batch [][]byte
	flush := func() {
		r, err := ms.AppendRows(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		batch = nil
	}
	for i := 0; i < n; i++ {
		batch = append(batch, readRow(t, md, i))
		if len(batch) == 2000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	for _, r := range results {
		if _, err := r.GetResult(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

func readRow(t *testing.T, md protoreflect.MessageDescriptor, i int) []byte {
	m := dynamicpb.NewMessage(md)
	set := func(name string, v protoreflect.Value) { m.Set(md.Fields().ByName(protoreflect.Name(name)), v) }
	set("id", protoreflect.ValueOfInt64(int64(i)))
	if i%7 != 0 {
		set("name", protoreflect.ValueOfString(fmt.Sprintf("name-%d", i)))
	}
	set("score", protoreflect.ValueOfFloat64(float64(i)/4))
	// amount = i + 0.5 as NUMERIC bytes (value×10^9, little-endian).
	set("amount", protoreflect.ValueOfBytes(leBytes(big.NewInt(int64(i)*1_000_000_000+500_000_000))))
	set("ts", protoreflect.ValueOfInt64(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMicro()+int64(i)*1_000_001))
	set("day", protoreflect.ValueOfInt32(int32(20000+i%100)))
	tags := m.Mutable(md.Fields().ByName("tags")).List()
	for k := 0; k < i%3; k++ {
		tags.Append(protoreflect.ValueOfString(fmt.Sprintf("t%d", k)))
	}
	if i%5 != 0 {
		rf := md.Fields().ByName("rec")
		rec := m.NewField(rf).Message()
		rec.Set(rf.Message().Fields().ByName("a"), protoreflect.ValueOfString("x,\"y\""))
		rec.Set(rf.Message().Fields().ByName("b"), protoreflect.ValueOfBool(i%2 == 0))
		m.Set(rf, protoreflect.ValueOfMessage(rec))
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leBytes is a non-negative integer as little-endian bytes with a zero
// sign byte.
func leBytes(n *big.Int) []byte {
	be := n.Bytes()
	out := make([]byte, len(be)+1)
	for i, b := range be {
		out[len(be)-1-i] = b
	}
	return out
}

func runCLI(t *testing.T, srv *testkit.Server, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), LookupEnv: func(k string) (string, bool) {
		switch k {
		case "BQSTORE_API":
			return "http://" + srv.HTTPAddr(), true
		case "BQSTORE_ENDPOINT":
			return srv.GRPCAddr(), true
		}
		return "", false
	}}
	code = cli.MainEnv(context.Background(), args, env)
	return out.String(), errb.String(), code
}

// TestHeadGolden runs head against a server holding 12 rows.
// Regenerate with: go test ./internal/cli -run TestHeadGolden -rewrite
func TestHeadGolden(t *testing.T) {
	srv := readServer(t, 12)
	datadriven.RunTest(t, "testdata/head", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "bqstore" {
			t.Fatalf("unknown directive %s", d.Cmd)
		}
		out, errs, code := runCLI(t, srv, strings.Fields(d.Input)...)
		if errs != "" {
			out += "stderr: " + errs
		}
		if code != 0 {
			out += "exit " + strconv.Itoa(code) + "\n"
		}
		return out
	})
}

// TestExtractRoundTrip extracts a table in every format with several
// streams, reads each file back with its format's reader and compares it
// with the rows written.
func TestExtractRoundTrip(t *testing.T) {
	const n = 5000
	srv := readServer(t, n)
	dir := t.TempDir()
	for _, tc := range []struct {
		format, columns, where string
		want                   func(i int) bool
	}{
		{format: "parquet"},
		{format: "arrow"},
		{format: "ndjson"},
		{format: "csv", columns: flatColumns},
		{format: "parquet", columns: "rec.a,id", where: "id >= 4000 AND name IS NOT NULL", want: func(i int) bool { return i >= 4000 && i%7 != 0 }},
		{format: "csv", columns: "id,score", where: "MOD(id, 10) = 3", want: func(i int) bool { return i%10 == 3 }},
	} {
		t.Run(fmt.Sprintf("format=%s/columns=%s/where=%s", tc.format, tc.columns, tc.where), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("out-%s-%d.%s", tc.format, len(tc.columns)+len(tc.where), tc.format))
			args := []string{"extract", "--streams", "3", "local:d.t", out}
			if tc.columns != "" {
				args = append(args, "--columns", tc.columns)
			}
			if tc.where != "" {
				args = append(args, "--where", tc.where)
			}
			if _, errs, code := runCLI(t, srv, args...); code != 0 {
				t.Fatalf("extract: exit %d: %s", code, errs)
			}
			if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
				t.Fatalf("%s.partial left behind", out)
			}
			got := readBack(t, tc.format, out)
			var wantIDs []int
			for i := 0; i < n; i++ {
				if tc.want == nil || tc.want(i) {
					wantIDs = append(wantIDs, i)
				}
			}
			if len(got) != len(wantIDs) {
				t.Fatalf("%d rows read back, want %d", len(got), len(wantIDs))
			}
			sort.Slice(got, func(a, b int) bool {
				x, _ := strconv.Atoi(got[a]["id"])
				y, _ := strconv.Atoi(got[b]["id"])
				return x < y
			})
			cols := strings.Split(cmpOrString(tc.columns, "id,name,score,amount,ts,day,tags,rec"), ",")
			for k, i := range wantIDs {
				want := expectedRow(i)
				for _, c := range cols {
					if got[k][c] != want[c] {
						t.Fatalf("row %d column %s = %q, want %q", i, c, got[k][c], want[c])
					}
				}
			}
		})
	}

	// To stdout.
	stdout, errs, code := runCLI(t, srv, "extract", "--format", "ndjson", "--columns", "id", "--where", "id < 10", "local:d.t", "-")
	if code != 0 || strings.Count(stdout, "\n") != 10 || !strings.Contains(stdout, `{"id":"9"}`) {
		t.Fatalf("extract to stdout: exit %d, %q, stderr %q", code, stdout, errs)
	}

	// Errors: a nested column in CSV, an unknown column, a bad filter, a
	// missing table; no file is left behind.
	for _, args := range [][]string{
		{"extract", "local:d.t", filepath.Join(dir, "bad.csv")},
		{"extract", "local:d.t", filepath.Join(dir, "bad.ndjson"), "--columns", "nope"},
		{"extract", "local:d.t", filepath.Join(dir, "bad.ndjson"), "--where", "id >"},
		{"extract", "local:d.missing", filepath.Join(dir, "bad.ndjson")},
		{"extract", "local:d.t", filepath.Join(dir, "bad.xlsx")},
	} {
		_, errs, code := runCLI(t, srv, args...)
		if code == 0 || errs == "" {
			t.Fatalf("%v: exit %d, stderr %q; want a failure", args, code, errs)
		}
		if _, err := os.Stat(args[2]); !os.IsNotExist(err) {
			t.Fatalf("%v left %s behind", args, args[2])
		}
	}
}

func cmpOrString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// expectedRow is row i of readServer in the canonical text form readBack
// produces.
func expectedRow(i int) map[string]string {
	r := map[string]string{
		"id":     strconv.Itoa(i),
		"name":   "NULL",
		"score":  strconv.FormatFloat(float64(i)/4, 'g', -1, 64),
		"amount": strconv.Itoa(i) + ".5",
		"ts":     strconv.FormatInt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMicro()+int64(i)*1_000_001, 10),
		"day":    time.Unix(int64(20000+i%100)*86400, 0).UTC().Format("2006-01-02"),
		"rec":    "NULL",
		"rec.a":  "NULL",
	}
	if i%7 != 0 {
		r["name"] = fmt.Sprintf("name-%d", i)
	}
	var tags []string
	for k := 0; k < i%3; k++ {
		tags = append(tags, fmt.Sprintf("t%d", k))
	}
	r["tags"] = "[" + strings.Join(tags, " ") + "]"
	if i%5 != 0 {
		r["rec"] = fmt.Sprintf("{x,\"y\" %v}", i%2 == 0)
		r["rec.a"] = "x,\"y\""
	}
	return r
}

// readBack reads an extracted file with its format's reader into rows of
// canonical text: NULL, numbers in Go's shortest form, TIMESTAMP as
// microseconds, DATE as YYYY-MM-DD, tags as [a b], rec as {a b} and rec.a.
func readBack(t *testing.T, format, path string) []map[string]string {
	t.Helper()
	var rows []map[string]string
	switch format {
	case "arrow", "parquet":
		var recs []arrow.Record
		switch format {
		case "arrow":
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := ipc.NewFileReader(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for i := 0; i < r.NumRecords(); i++ {
				rec, err := r.RecordBatch(i)
				if err != nil {
					t.Fatal(err)
				}
				rec.Retain()
				recs = append(recs, rec)
			}
		case "parquet":
			pf, err := file.OpenParquetFile(path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := fr.ReadTable(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			tr := array.NewTableReader(tbl, 1000)
			defer tr.Release()
			for tr.Next() {
				rec := tr.RecordBatch()
				rec.Retain()
				recs = append(recs, rec)
			}
		}
		for _, rec := range recs {
			for i := 0; i < int(rec.NumRows()); i++ {
				row := map[string]string{}
				for k, f := range rec.Schema().Fields() {
					col := rec.Column(k)
					row[f.Name] = arrowText(col, i)
					if s, ok := col.(*array.Struct); ok && f.Name == "rec" {
						row["rec.a"] = "NULL"
						if !s.IsNull(i) {
							row["rec.a"] = arrowText(s.Field(0), i)
						}
					}
				}
				rows = append(rows, row)
			}
			rec.Release()
		}
	case "csv":
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		hdr := recs[0]
		for _, rec := range recs[1:] {
			row := map[string]string{}
			for k, name := range hdr {
				v := rec[k]
				switch {
				case v == "":
					v = "NULL"
				case name == "ts":
					tm, err := time.Parse("2006-01-02 15:04:05.999999 UTC", v)
					if err != nil {
						t.Fatal(err)
					}
					v = strconv.FormatInt(tm.UnixMicro(), 10)
				case name == "score":
					fv, _ := strconv.ParseFloat(v, 64)
					v = strconv.FormatFloat(fv, 'g', -1, 64)
				}
				row[name] = v
			}
			rows = append(rows, row)
		}
	case "ndjson":
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var m map[string]any
			d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			d.UseNumber()
			if err := d.Decode(&m); err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			row := map[string]string{"name": "NULL", "rec": "NULL", "rec.a": "NULL", "tags": "[]"}
			for k, v := range m {
				switch x := v.(type) {
				case json.Number:
					row[k] = x.String()
				case string:
					row[k] = x
					if k == "ts" {
						tm, err := time.Parse("2006-01-02 15:04:05.999999 UTC", x)
						if err != nil {
							t.Fatal(err)
						}
						row[k] = strconv.FormatInt(tm.UnixMicro(), 10)
					}
				case []any:
					row[k] = strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(x), "["), "]")
					row[k] = "[" + row[k] + "]"
				case map[string]any:
					row[k] = fmt.Sprintf("{%v %v}", x["a"], x["b"])
					row["rec.a"] = fmt.Sprint(x["a"])
				}
			}
			if _, ok := m["id"].(string); !ok {
				t.Fatalf("NDJSON INT64 id is %T, want a string (BigQuery's JSON export)", m["id"])
			}
			rows = append(rows, row)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

func arrowText(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.String:
		return a.Value(i)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Decimal128:
		return strings.TrimRight(strings.TrimRight(new(big.Rat).SetFrac(a.Value(i).BigInt(), big.NewInt(1e9)).FloatString(9), "0"), ".")
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.List:
		lo, hi := a.ValueOffsets(i)
		var parts []string
		for j := lo; j < hi; j++ {
			parts = append(parts, arrowText(a.ListValues(), int(j)))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case *array.Struct:
		var parts []string
		for k := 0; k < a.NumField(); k++ {
			parts = append(parts, arrowText(a.Field(k), i))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return col.ValueStr(i)
}

// TestExtractResumesAfterReset: ReadRows connections that break
// mid-stream (read.reset faults) are resumed at the offset reached; the
// file holds every row once.
func TestExtractResumesAfterReset(t *testing.T) {
	spec, err := faults.Parse("read.reset:messages=2,times=4")
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	srv := readServer(t, n, func(c *server.Config) {
		c.Faults = spec
		c.Read.MaxResponseBytes = 8 << 10
	})
	out := filepath.Join(t.TempDir(), "out.ndjson")
	if _, errs, code := runCLI(t, srv, "extract", "--streams", "2", "--columns", "id", "local:d.t", out); code != 0 {
		t.Fatalf("extract: exit %d: %s", code, errs)
	}
	if st := srv.Faults().Status(); len(st.Stats) != 1 || st.Stats[0].Injected != 4 {
		t.Fatalf("fault status %+v: want 4 resets injected", st)
	}
	rows := readBack(t, "ndjson", out)
	seen := make([]bool, n)
	for _, r := range rows {
		id, err := strconv.Atoi(r["id"])
		if err != nil || id < 0 || id >= n || seen[id] {
			t.Fatalf("id %q duplicated or out of range", r["id"])
		}
		seen[id] = true
	}
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
}
