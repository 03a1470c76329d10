package vfs

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

func readAll(t *testing.T, fs *MemFS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	size, _ := f.Size()
	buf := make([]byte, size)
	if size > 0 {
		if _, err := f.ReadAt(buf, 0); err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
	}
	return buf
}

// TestPowerLossPages checks the page model: synced bytes always survive,
// each unsynced page independently survives whole, in part or not at
// all, so a later page can survive while an earlier one is lost (read as
// zeros).
func TestPowerLossPages(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	f, _ := m.Create("d/f")
	m.SyncDir("d")
	synced := bytes.Repeat([]byte{'s'}, 100)
	f.Write(synced)
	f.Sync()
	// Three more pages, unsynced, of distinct bytes.
	var unsynced []byte
	for _, c := range []byte{'a', 'b', 'c'} {
		unsynced = append(unsynced, bytes.Repeat([]byte{c}, PageSize)...)
	}
	f.Write(unsynced)
	want := append(slices.Clone(synced), unsynced...)

	if got := readAll(t, m.PowerLoss(nil), "d/f"); !bytes.Equal(got, synced) {
		t.Fatalf("PowerLoss(nil) kept %d bytes, want the %d synced", len(got), len(synced))
	}
	var sawHole, sawPartial, sawWhole, sawNone bool
	for seed := range uint64(200) {
		got := readAll(t, m.PowerLoss(rand.New(rand.NewPCG(seed, 0))), "d/f")
		if !bytes.Equal(got[:len(synced)], synced) {
			t.Fatalf("seed %d: synced bytes changed", seed)
		}
		if len(got) > len(want) {
			t.Fatalf("seed %d: %d bytes, more than written", seed, len(got))
		}
		for i := len(synced); i < len(got); i++ {
			if got[i] != 0 && got[i] != want[i] {
				t.Fatalf("seed %d: byte %d = %q, neither written nor zero", seed, i, got[i])
			}
		}
		switch {
		case len(got) == len(synced):
			sawNone = true
		case bytes.Equal(got, want):
			sawWhole = true
		}
		// An earlier page's sector lost while a later byte survived.
		if len(got) > PageSize && slices.Contains(got[len(synced):PageSize], 0) {
			sawHole = true
		}
		if len(got)%sectorSize == 0 && len(got)%PageSize != 0 {
			sawPartial = true
		}
		// Same seed, same state.
		again := readAll(t, m.PowerLoss(rand.New(rand.NewPCG(seed, 0))), "d/f")
		if !bytes.Equal(got, again) {
			t.Fatalf("seed %d: two power losses differ", seed)
		}
	}
	if !sawHole || !sawPartial || !sawWhole || !sawNone {
		t.Fatalf("outcomes seen: hole %v partial %v whole %v none %v", sawHole, sawPartial, sawWhole, sawNone)
	}
}

// TestPowerLossTruncate: an unsynced truncation persists or not; after a
// Sync it always has.
func TestPowerLossTruncate(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	f, _ := m.Create("d/f")
	m.SyncDir("d")
	f.Write([]byte("header+torn-tail"))
	f.Sync()
	f.Truncate(6)
	f.Write([]byte("-next"))
	seen := map[string]bool{}
	for seed := range uint64(100) {
		seen[string(readAll(t, m.PowerLoss(rand.New(rand.NewPCG(seed, 0))), "d/f"))] = true
	}
	for _, s := range []string{"header+torn-tail", "header", "header-next", "header-next-tail"} {
		if !seen[s] {
			t.Errorf("never saw %q; saw %v", s, seen)
		}
	}
	f.Sync()
	if got := string(readAll(t, m.PowerLoss(rand.New(rand.NewPCG(1, 1))), "d/f")); got != "header-next" {
		t.Fatalf("after Sync: %q", got)
	}
}

// TestPowerLossNamespace: names are durable once their directory is
// synced; of the rest a prefix in operation order survives; a rename
// moves its file even if the file's create was lost.
func TestPowerLossNamespace(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	m.MkdirAll("e")
	a, _ := m.Create("d/a")
	a.Write([]byte("A"))
	a.Sync()
	m.SyncDir("d") // d/a durable
	b, _ := m.Create("d/b.tmp")
	b.Write([]byte("B"))
	b.Sync()
	m.Rename("d/b.tmp", "e/b") // durable with SyncDir("e"), its create is not
	m.SyncDir("e")
	c, _ := m.Create("d/c") // never synced by name
	c.Write([]byte("C"))
	c.Sync()
	m.Remove("d/a") // not durable

	list := func(fs *MemFS) []string {
		var all []string
		for _, d := range []string{"d", "e"} {
			names, _ := fs.List(d)
			for _, n := range names {
				all = append(all, d+"/"+n)
			}
		}
		return all
	}
	if got := list(m.PowerLoss(nil)); !slices.Equal(got, []string{"d/a", "e/b"}) {
		t.Fatalf("PowerLoss(nil): %v", got)
	}
	if got := string(readAll(t, m.PowerLoss(nil), "e/b")); got != "B" {
		t.Fatalf("renamed file holds %q", got)
	}
	seen := map[string]bool{}
	for seed := range uint64(100) {
		seen[string(bytes.Join(toBytes(list(m.PowerLoss(rand.New(rand.NewPCG(seed, 0))))), []byte(" ")))] = true
	}
	// Prefixes of [create b.tmp, create c, remove a] on top of the
	// durable d/a and e/b (the rename already consumed b.tmp's create).
	for _, s := range []string{"d/a e/b", "d/a d/c e/b", "d/c e/b"} {
		if !seen[s] {
			t.Errorf("never saw %q; saw %v", s, seen)
		}
	}
	if seen["e/b"] {
		t.Errorf("remove of d/a survived without the earlier create of d/c")
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// TestPowerLossInOrder: in-order writeback never leaves a hole before
// persisted data.
func TestPowerLossInOrder(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	f, _ := m.Create("d/f")
	m.SyncDir("d")
	var want []byte
	for _, c := range []byte{'a', 'b', 'c', 'd'} {
		want = append(want, bytes.Repeat([]byte{c}, PageSize)...)
	}
	f.Write(want)
	lens := map[int]bool{}
	for seed := range uint64(200) {
		got := readAll(t, m.PowerLossInOrder(rand.New(rand.NewPCG(seed, 0))), "d/f")
		if !bytes.Equal(got, want[:len(got)]) {
			t.Fatalf("seed %d: %d bytes, not a prefix of what was written", seed, len(got))
		}
		lens[len(got)] = true
	}
	if len(lens) < 5 {
		t.Fatalf("only %d distinct lengths", len(lens))
	}
}
