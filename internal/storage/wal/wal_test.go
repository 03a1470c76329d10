package wal

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/bqstore/bqstore/internal/storage/base"
)

func frames(payloads ...string) []byte {
	var b []byte
	for i, p := range payloads {
		b = AppendFrame(b, Type(i%3+1), int64(1000+i), []byte(p))
	}
	return b
}

func readAll(b []byte) ([]Frame, error) {
	r := NewReader(bytes.NewReader(b), int64(len(b)), "f", 0)
	r.Copy = true
	var out []Frame
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

func TestRoundTrip(t *testing.T) {
	in := []string{"", "a", "hello world", string(make([]byte, 1000)), "1234567"}
	b := frames(in...)
	if len(b)%Align != 0 {
		t.Fatalf("log length %d not aligned", len(b))
	}
	got, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %d frames, want %d", len(got), len(in))
	}
	var off int64
	for i, f := range got {
		if string(f.Payload) != in[i] || f.Type != Type(i%3+1) || f.TS != int64(1000+i) || f.Offset != off {
			t.Fatalf("frame %d = %+v", i, f)
		}
		if f.Offset%Align != 0 {
			t.Fatalf("frame %d at unaligned offset %d", i, f.Offset)
		}
		off += f.Len
	}
}

// TestTornVsCorrupt checks the classification of every kind of damage.
func TestTornVsCorrupt(t *testing.T) {
	good := frames("first frame", "second frame payload", "third")
	second := int64(FrameLen(len("first frame")))
	third := second + int64(FrameLen(len("second frame payload")))
	for _, tc := range []struct {
		name    string
		mutate  func(b []byte) []byte
		frames  int
		torn    bool
		corrupt bool
		at      int64
	}{
		{"clean", func(b []byte) []byte { return b }, 3, false, false, 0},
		{"zero tail", func(b []byte) []byte { return append(b, make([]byte, 64)...) }, 3, true, false, int64(len(good))},
		{"short header", func(b []byte) []byte { return append(b, 1, 2, 3) }, 3, true, false, int64(len(good))},
		{"cut in last payload", func(b []byte) []byte { return b[:len(b)-5] }, 2, true, false, third},
		{"cut in last header", func(b []byte) []byte { return b[:third+10] }, 2, true, false, third},
		{"bad crc in last", func(b []byte) []byte { b[third+HeaderSize] ^= 1; return b }, 2, true, false, third},
		{"bad crc in middle", func(b []byte) []byte { b[second+HeaderSize] ^= 1; return b }, 1, false, true, second},
		{"bad type in middle", func(b []byte) []byte { b[second+8] = 0; return b }, 1, false, true, second},
		{"bad length in middle", func(b []byte) []byte { b[second+4] = 0xff; return b }, 1, false, true, second},
		{"zeroed middle", func(b []byte) []byte { clear(b[second:third]); return b }, 1, false, true, second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(bytes.Clone(good))
			got, err := readAll(b)
			if len(got) != tc.frames {
				t.Fatalf("read %d frames before the error, want %d (err %v)", len(got), tc.frames, err)
			}
			var torn *TornError
			var corrupt *CorruptionError
			switch {
			case tc.torn:
				if !errors.As(err, &torn) || torn.Offset != tc.at {
					t.Fatalf("err = %v, want a torn tail at %d", err, tc.at)
				}
			case tc.corrupt:
				if !errors.As(err, &corrupt) || corrupt.Offset != tc.at || corrupt.File != "f" || !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("err = %v, want corruption at %d", err, tc.at)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestReadAtRejectsDamage(t *testing.T) {
	b := frames("abc", "defgh")
	off := int64(FrameLen(3))
	f, err := ReadAt(bytes.NewReader(b), int64(len(b)), "f", off, nil)
	if err != nil || string(f.Payload) != "defgh" {
		t.Fatalf("ReadAt = %q, %v", f.Payload, err)
	}
	b[len(b)-8] ^= 0xff
	if _, err := ReadAt(bytes.NewReader(b), int64(len(b)), "f", off, nil); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("ReadAt of a damaged frame: %v", err)
	}
}

// TestLargeTornTail: a long garbage tail after valid frames (a big group
// cut by a crash) is classified as torn, quickly; a valid frame far into
// it makes it corruption.
func TestLargeTornTail(t *testing.T) {
	good := frames("a", "b")
	tail := bytes.Repeat([]byte{0xAB, 0, 0, 0, 0x10, 0, 0, 0}, 3<<17) // 3 MiB of junk
	b := append(append([]byte(nil), good...), tail...)
	_, err := readAll(b)
	var torn *TornError
	if !errors.As(err, &torn) || torn.Offset != int64(len(good)) {
		t.Fatalf("err = %v, want a torn tail at %d", err, len(good))
	}
	b = append(b, frames("late")...)
	_, err = readAll(b)
	var corrupt *CorruptionError
	if !errors.As(err, &corrupt) || corrupt.Offset != int64(len(good)) {
		t.Fatalf("err = %v, want corruption at %d", err, len(good))
	}
}

// TestSyncedOffsets: in SyncedOffsets mode, damage followed only by valid
// frames written before it was synced (a later page of the last group on
// disk, an earlier one not) is a torn tail; damage followed by a frame
// written after it was synced is corruption. Without the mode both are
// corruption.
func TestSyncedOffsets(t *testing.T) {
	// Group 1: frames a, b (synced 0); group 2: c, d, e written after b
	// was synced.
	var b []byte
	b = AppendFrameSynced(b, 1, 1, 0, []byte("a"))
	b = AppendFrameSynced(b, 1, 2, 0, []byte("b"))
	g2 := int64(len(b))
	b = AppendFrameSynced(b, 1, 3, g2, []byte("c"))
	d := int64(len(b))
	b = AppendFrameSynced(b, 1, 4, g2, []byte("d"))
	b = AppendFrameSynced(b, 1, 5, g2, []byte("e"))
	bOff := int64(FrameLen(1))
	read := func(data []byte, mode bool) ([]Frame, error) {
		r := NewReader(bytes.NewReader(data), int64(len(data)), "f", 0)
		r.SyncedOffsets = mode
		var out []Frame
		for {
			f, err := r.Next()
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				return out, err
			}
			out = append(out, f)
		}
	}
	got, err := read(b, true)
	if err != nil || len(got) != 5 || got[3].Synced != g2 || got[1].Synced != 0 {
		t.Fatalf("clean read: %d frames, %v", len(got), err)
	}
	for _, tc := range []struct {
		name    string
		damage  int64 // frame offset zeroed
		mode    bool
		frames  int
		corrupt bool
	}{
		{"unsynced frame lost, later ones on disk", g2, true, 2, false},
		{"middle of unsynced group lost", d, true, 3, false},
		{"synced frame lost before a later group", bOff, true, 1, true},
		{"old format: any later frame is corruption", d, false, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(b)
			clear(data[tc.damage : tc.damage+int64(FrameLen(1))])
			got, err := read(data, tc.mode)
			if len(got) != tc.frames {
				t.Fatalf("read %d frames, want %d (err %v)", len(got), tc.frames, err)
			}
			var torn *TornError
			var corrupt *CorruptionError
			if tc.corrupt {
				if !errors.As(err, &corrupt) || corrupt.Offset != tc.damage {
					t.Fatalf("err = %v, want corruption at %d", err, tc.damage)
				}
			} else if !errors.As(err, &torn) || torn.Offset != tc.damage {
				t.Fatalf("err = %v, want a torn tail at %d", err, tc.damage)
			}
		})
	}
	// A synced offset past the frame itself is invalid.
	bad := AppendFrameSynced(nil, 1, 1, 64, []byte("x"))
	if _, err := ReadAt(bytes.NewReader(bad), int64(len(bad)), "f", 0, nil); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("ReadAt of a frame whose synced offset is past it: %v", err)
	}
}

// FuzzWALReader feeds arbitrary bytes to the reader: it must never panic,
// every frame it returns must re-encode to the same bytes, and it must
// end with EOF, a torn tail or a corruption error.
func FuzzWALReader(f *testing.F) {
	f.Add(frames("a", "bb", "ccc"))
	f.Add(frames("x")[:10])
	f.Add(append(frames("hello"), 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		r := NewReader(bytes.NewReader(b), int64(len(b)), "fuzz", 0)
		for {
			fr, err := r.Next()
			if err == io.EOF {
				return
			}
			var torn *TornError
			var corrupt *CorruptionError
			if errors.As(err, &torn) || errors.As(err, &corrupt) {
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			re := AppendFrameSynced(nil, fr.Type, fr.TS, fr.Synced, fr.Payload)
			if !bytes.Equal(re, b[fr.Offset:fr.Offset+fr.Len]) {
				t.Fatalf("frame at %d does not re-encode to its bytes", fr.Offset)
			}
		}
	})
}
