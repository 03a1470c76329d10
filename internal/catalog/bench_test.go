package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bqstore/bqstore/internal/schema"
)

// setupFS skips fsyncs while fast is set, so that benchmarks can build a
// large catalog quickly and then measure durable changes.
type setupFS struct {
	osFS
	fast    bool
	written int64 // bytes written
}

func (f *setupFS) WriteFileSync(name string, data []byte) error {
	f.written += int64(len(data))
	if f.fast {
		return os.WriteFile(name, data, 0o644)
	}
	return f.osFS.WriteFileSync(name, data)
}

func (f *setupFS) AppendSync(name string, data []byte) error {
	f.written += int64(len(data))
	if f.fast {
		fh, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		if _, err := fh.Write(data); err != nil {
			fh.Close()
			return err
		}
		return fh.Close()
	}
	return f.osFS.AppendSync(name, data)
}

func (f *setupFS) SyncDir(dir string) error {
	if f.fast {
		return nil
	}
	return f.osFS.SyncDir(dir)
}

// BenchmarkUpdateTable measures a durable catalog change (a description
// update: a log record appended and fsynced, and now and then a
// checkpoint) with n tables of 20 columns in the catalog. written-B/op is
// what a change writes; catalog-B the size of the whole catalog (CATALOG
// and CATALOG.log), which each change wrote before the log.
//
//	go test -run '^$' -bench BenchmarkUpdateTable -benchmem ./internal/catalog
func BenchmarkUpdateTable(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("tables=%d", n), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			fsys := &setupFS{fast: true}
			c, err := Open(dir, Options{FS: fsys})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
				b.Fatal(err)
			}
			s := &schema.Schema{}
			for i := range 20 {
				s.Fields = append(s.Fields, &schema.Field{Name: fmt.Sprintf("col_%d", i), Type: schema.String, Description: "a column"})
			}
			for i := range n {
				if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: fmt.Sprintf("t%d", i), Schema: s}); err != nil {
					b.Fatal(err)
				}
			}
			fsys.fast = false
			var size int64
			for _, name := range []string{fileName, logFileName} {
				if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
					size += st.Size()
				}
			}
			b.ReportAllocs()
			desc := "changed"
			before, n := fsys.written, 0
			for b.Loop() {
				n++
				if _, err := c.UpdateTable(ctx, "p", "d", "t0", TablePatch{Description: &desc}, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(fsys.written-before)/float64(n), "written-B/op")
			b.ReportMetric(float64(size), "catalog-B")
		})
	}
}

// BenchmarkWideTableChange measures durable changes next to a
// 3,000-column table (issue 12, finding 12): a PATCH of the table's
// column descriptions (the reported case), a PATCH of its description,
// and an unrelated create. written-B/op is what the change wrote to the
// catalog's files (log records and checkpoints).
//
//	go test -run '^$' -bench BenchmarkWideTableChange -benchtime 60x ./internal/catalog
func BenchmarkWideTableChange(b *testing.B) {
	for _, op := range []string{"patch-columns", "patch-table", "create-other"} {
		b.Run("op="+op, func(b *testing.B) {
			ctx := context.Background()
			fsys := &countFS{}
			c, err := Open(b.TempDir(), Options{FS: fsys})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.CreateDataset(ctx, Dataset{ProjectID: "p", DatasetID: "d"}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: "wide", Schema: cols(3000, "a column of the wide table")}); err != nil {
				b.Fatal(err)
			}
			before := fsys.written
			i := 0
			for b.Loop() {
				i++
				switch op {
				case "patch-columns":
					_, err = c.UpdateTable(ctx, "p", "d", "wide", TablePatch{Schema: cols(3000, fmt.Sprintf("description %d", i))}, "")
				case "patch-table":
					desc := fmt.Sprintf("description %d", i)
					_, err = c.UpdateTable(ctx, "p", "d", "wide", TablePatch{Description: &desc}, "")
				case "create-other":
					_, err = c.CreateTable(ctx, TableSpec{ProjectID: "p", DatasetID: "d", TableID: fmt.Sprintf("t%d", i), Schema: cols(3, "")})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(fsys.written-before)/float64(i), "written-B/op")
		})
	}
}
