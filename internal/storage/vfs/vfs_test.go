package vfs

import (
	"errors"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"testing"
)

// TestFS runs the same operations against every implementation.
func TestFS(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		dir  func(t *testing.T) string
	}{
		{"mem", NewMem(), func(*testing.T) string { return "root" }},
		{"disk", Default, func(t *testing.T) string { return t.TempDir() }},
		{"errfs(mem)", WithErrors(NewMem(), func(Op, string) error { return nil }), func(*testing.T) string { return "root" }},
	} {
		t.Run("fs="+tc.name, func(t *testing.T) {
			fs, dir := tc.fs, tc.dir(t)
			d := path.Join(dir, "a", "b")
			if err := fs.MkdirAll(d); err != nil {
				t.Fatal(err)
			}
			name := path.Join(d, "f")
			f, err := fs.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"hello ", "world"} {
				if _, err := f.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 5)
			if n, err := f.ReadAt(buf, 6); n != 5 || string(buf) != "world" {
				t.Fatalf("ReadAt = %d %q %v", n, buf, err)
			}
			if _, err := f.ReadAt(buf, 9); !errors.Is(err, io.EOF) {
				t.Fatalf("short ReadAt: %v, want EOF", err)
			}
			if err := f.Truncate(5); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("!")); err != nil { // appends after truncate
				t.Fatal(err)
			}
			if size, _ := f.Size(); size != 6 {
				t.Fatalf("size %d after truncate+write", size)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := fs.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			all := make([]byte, 6)
			if _, err := r.ReadAt(all, 0); err != nil || string(all) != "hello!" {
				t.Fatalf("content %q %v", all, err)
			}
			r.Close()
			a, err := fs.OpenAppend(name)
			if err != nil {
				t.Fatal(err)
			}
			a.Write([]byte("?"))
			a.Close()
			if err := fs.Rename(name, path.Join(d, "g")); err != nil {
				t.Fatal(err)
			}
			if err := fs.SyncDir(d); err != nil {
				t.Fatal(err)
			}
			names, err := fs.List(d)
			if err != nil || !slices.Equal(names, []string{"g"}) {
				t.Fatalf("List = %v %v", names, err)
			}
			if fs.Exists(name) || !fs.Exists(path.Join(d, "g")) {
				t.Fatal("Exists wrong after rename")
			}
			if _, err := fs.Open(name); err == nil {
				t.Fatal("Open of a renamed file succeeded")
			}
			if err := fs.Remove(path.Join(d, "g")); err != nil {
				t.Fatal(err)
			}
			if err := fs.RemoveAll(path.Join(dir, "a")); err != nil {
				t.Fatal(err)
			}
			if fs.Exists(d) {
				t.Fatal("RemoveAll left the directory")
			}
		})
	}
}

func TestMemCrash(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	f, _ := m.Create("d/synced")
	f.Write([]byte("durable"))
	f.Sync()
	f.Write([]byte("-lost"))
	g, _ := m.Create("d/unsynced-name")
	g.Write([]byte("x"))
	g.Sync()
	m.SyncDir("d")
	h, _ := m.Create("d/never-dir-synced")
	h.Write([]byte("y"))
	h.Sync()

	c := m.CrashClone(nil)
	names, _ := c.List("d")
	if !slices.Equal(names, []string{"synced", "unsynced-name"}) {
		t.Fatalf("after crash: %v", names)
	}
	r, _ := c.Open("d/synced")
	size, _ := r.Size()
	if size != int64(len("durable")) {
		t.Fatalf("unsynced bytes survived: size %d", size)
	}
	// A torn tail: a prefix of the unsynced bytes.
	c2 := m.CrashClone(rand.New(rand.NewPCG(1, 2)))
	r2, _ := c2.Open("d/synced")
	size2, _ := r2.Size()
	if size2 < 7 || size2 > 12 {
		t.Fatalf("torn size %d", size2)
	}
	buf := make([]byte, size2)
	r2.ReadAt(buf, 0)
	if string(buf) != "durable-lost"[:size2] {
		t.Fatalf("torn content %q", buf)
	}

	// The crash point: operations after the k-th fail.
	m2 := NewMem()
	m2.MkdirAll("d")
	m2.SetCrashAfter(2)
	f2, err := m2.Create("d/f") // 1
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f2.Write([]byte("a")); err != nil { // 2
		t.Fatal(err)
	}
	if err := f2.Sync(); !errors.Is(err, ErrInjected) { // 3: fails
		t.Fatalf("op after the crash point: %v", err)
	}
}

func TestInjector(t *testing.T) {
	boom := errors.New("boom")
	fs := WithErrors(NewMem(), func(op Op, name string) error {
		if op == OpSync {
			return boom
		}
		return nil
	})
	fs.MkdirAll("d")
	f, err := fs.Create("d/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, boom) {
		t.Fatalf("Sync = %v", err)
	}
}
