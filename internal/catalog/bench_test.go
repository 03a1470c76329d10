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
	fast bool
}

func (f *setupFS) WriteFileSync(name string, data []byte) error {
	if f.fast {
		return os.WriteFile(name, data, 0o644)
	}
	return f.osFS.WriteFileSync(name, data)
}

func (f *setupFS) SyncDir(dir string) error {
	if f.fast {
		return nil
	}
	return f.osFS.SyncDir(dir)
}

// BenchmarkUpdateTable measures a durable catalog change (a description
// update: encode, write, fsync, rename, fsync the directory) with n tables
// of 20 columns in the catalog. SetBytes is the CATALOG file size.
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
			st, err := os.Stat(filepath.Join(dir, fileName))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			b.ReportAllocs()
			desc := "changed"
			for b.Loop() {
				if _, err := c.UpdateTable(ctx, "p", "d", "t0", TablePatch{Description: &desc}, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
