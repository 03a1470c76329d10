package catalog

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// childEnv makes the test binary act as a catalog writer that is killed.
const childEnv = "BQSTORE_CATALOG_CRASH_CHILD"

// TestKill9 runs a child process that creates tables and changes schemas,
// printing each acknowledged change, kills it with SIGKILL mid-stream, and
// checks that the reopened catalog holds every acknowledged change.
func TestKill9(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int{} // table -> schema columns acknowledged
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 40 {
		var name string
		var cols int
		if _, err := fmt.Sscanf(sc.Text(), "acked %s %d", &name, &cols); err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		acked[name] = cols
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(acked) < 40 {
		t.Fatalf("child stopped after %d tables", len(acked))
	}
	c, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	for name, cols := range acked {
		tb, err := c.Table("p", "d", name)
		if err != nil {
			t.Fatalf("acknowledged table %s lost: %v", name, err)
		}
		if got := len(tb.Schema().Fields); got < cols {
			t.Fatalf("table %s has %d columns, %d were acknowledged", name, got, cols)
		}
	}
}

func crashChild(dir string) {
	ctx := context.Background()
	c, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		name := fmt.Sprintf("t%d", i)
		s := &schema.Schema{Fields: []*schema.Field{{Name: "a", Type: schema.String}}}
		if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: name, Schema: s}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(w, "acked %s 1\n", name)
		w.Flush()
		s.Fields = append(s.Fields, &schema.Field{Name: "b" + strings.Repeat("x", i%3), Type: schema.Integer})
		if _, err := c.UpdateTable(ctx, "p", "d", name, TablePatch{Schema: s}, ""); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(w, "acked %s 2\n", name)
		w.Flush()
	}
}

// FuzzDecodeFile feeds arbitrary bytes to the CATALOG decoder, both as a
// whole file and as a document wrapped with its correct checksum (so that
// the fuzzer gets past the CRC): no panics, and whatever decodes
// re-encodes to a file that decodes and encodes to the same bytes again.
func FuzzDecodeFile(f *testing.F) {
	c, err := Open(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d", Labels: map[string]string{"a": "b"}}); err != nil {
		f.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "t",
		Schema: &schema.Schema{Fields: []*schema.Field{{Name: "r", Type: schema.Record, Fields: []*schema.Field{{Name: "x", Type: schema.Date}}}}}}); err != nil {
		f.Fatal(err)
	}
	good, err := encodeDocument(c.current(), 3)
	if err != nil {
		f.Fatal(err)
	}
	var env envelope
	if err := json.Unmarshal(good, &env); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(env.Catalog))
	f.Add([]byte(`{"projects":[],"datasets":[],"tables":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		for _, file := range [][]byte{b,
			fmt.Appendf(nil, `{"format":1,"crc32c":%d,"catalog":%s}`, crc32.Checksum(b, castagnoli), b),
			fmt.Appendf(nil, `{"format":2,"crc32c":%d,"catalog":%s}`, crc32.Checksum(b, castagnoli), b)} {
			checkDecode(t, file)
		}
	})
}

func checkDecode(t *testing.T, b []byte) {
	{
		st, seq, err := decodeFile(b)
		if err != nil {
			return
		}
		enc, err := encodeDocument(st, seq)
		if err != nil {
			t.Fatal(err)
		}
		st2, seq2, err := decodeFile(enc)
		if err != nil {
			t.Fatalf("re-encoded catalog does not decode: %v\n%s", err, enc)
		}
		enc2, _ := encodeDocument(st2, seq2)
		if string(enc) != string(enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	}
}
