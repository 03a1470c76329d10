// Package segment is the footer of a sealed table log file: the batch
// index (where each row batch's frame is, which stream and offsets it
// holds, its timestamp and schema version) and per-column zone maps
// (min/max/null count) for pruning, plus the offset of the checkpoint
// that precedes the footer. With it, opening a sealed file never scans
// it.
//
// A sealed file ends with two frames (package wal framing):
//
//	... | CHECKPOINT frame | FOOTER frame (payload: Footer) | TRAILER frame
//
// The TRAILER payload is exactly 16 bytes: the FOOTER frame's offset
// (uint64 LE) and the magic "BQSEGEND". The TRAILER frame is therefore
// always TrailerLen bytes and is found at size-TrailerLen.
//
// Footer payload (codec encoding, see docs/format/segment.md):
//
//	uvarint version (=2; 1 is still read)
//	varint  checkpoint offset
//	uvarint batch count, then per batch:
//	  varint offset, varint frame length, string stream id,
//	  varint first row offset, varint rows, varint ts (µs),
//	  uvarint schema version, zone maps (version 2: Stats.EncodeSparse,
//	    the non-null columns only; version 1: uvarint column count, then
//	    per column ColumnStats),
//	  uvarint run count, then per run: varint rows, varint ts
//	    (compacted batches only: append times of row runs)
//
// ColumnStats: varint null count, uvarint kind, then by kind:
// none: nothing; int: varint min, varint max; float: 8-byte min, max;
// bytes: bytes min, bytes max; bool: bool min, bool max.
package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/bqstore/bqstore/internal/storage/base"
	"github.com/bqstore/bqstore/internal/storage/codec"
	"github.com/bqstore/bqstore/internal/storage/wal"
)

// Kind is the physical kind of a zone map's bounds.
type Kind uint8

// Zone map kinds.
const (
	KindNone  Kind = iota // no min/max (unsupported type, or all null)
	KindInt               // integers, timestamps, dates, times (raw int)
	KindFloat             // floating point (NaN excluded from bounds)
	KindBytes             // strings and binary (byte order)
	KindBool
)

// ColumnStats is the zone map of one top-level column of one batch.
type ColumnStats struct {
	NullCount  int64
	Kind       Kind
	MinI, MaxI int64
	MinF, MaxF float64
	MinB, MaxB []byte
}

// Batch is the index entry of one row batch.
type Batch struct {
	Offset        int64 // frame offset in the file
	Len           int64 // frame length
	Stream        string
	First         int64 // first row's stream offset
	Rows          int64
	TS            int64 // frame timestamp, µs
	SchemaVersion int
	// Stats has a zone map per column of the batch's schema version;
	// all-null columns are implied, not stored (see Stats).
	Stats Stats
	// Runs, set only for batches merged by compaction, gives the append
	// time of consecutive row runs (ascending TS; rows sum to Rows).
	Runs []Run
}

// Run is Rows consecutive rows appended at TS.
type Run struct {
	Rows int64
	TS   int64 // µs
}

// AppendedBy is the number of leading rows of the batch appended at or
// before ts.
func (b *Batch) AppendedBy(ts int64) int64 {
	if len(b.Runs) == 0 {
		if b.TS <= ts {
			return b.Rows
		}
		return 0
	}
	var n int64
	for _, r := range b.Runs {
		if r.TS > ts {
			break
		}
		n += r.Rows
	}
	return n
}

// Footer is a sealed file's index.
type Footer struct {
	CheckpointOffset int64
	Batches          []Batch
}

// Footer versions: version 2 stores the zone maps of non-null columns
// only (Stats.EncodeSparse); version 1 (written before) one per column.
const (
	footerVersionDense = 1
	footerVersion      = 2
)

// TrailerMagic ends every sealed file.
const TrailerMagic = "BQSEGEND"

// TrailerLen is the length of the TRAILER frame.
var TrailerLen = int64(wal.FrameLen(16))

// AppendStats encodes one zone map.
func AppendStats(e *codec.Encoder, s *ColumnStats) {
	e.Varint(s.NullCount)
	e.Uvarint(uint64(s.Kind))
	switch s.Kind {
	case KindInt:
		e.Varint(s.MinI)
		e.Varint(s.MaxI)
	case KindFloat:
		e.Float(s.MinF)
		e.Float(s.MaxF)
	case KindBytes:
		e.Bytes(s.MinB)
		e.Bytes(s.MaxB)
	case KindBool:
		e.Bool(s.MinI != 0)
		e.Bool(s.MaxI != 0)
	}
}

// DecodeStats decodes one zone map.
func DecodeStats(d *codec.Decoder) ColumnStats {
	var s ColumnStats
	s.NullCount = d.Varint()
	s.Kind = Kind(d.Uvarint())
	switch s.Kind {
	case KindNone:
	case KindInt:
		s.MinI, s.MaxI = d.Varint(), d.Varint()
	case KindFloat:
		s.MinF, s.MaxF = d.Float(), d.Float()
	case KindBytes:
		s.MinB, s.MaxB = bytes.Clone(d.Bytes()), bytes.Clone(d.Bytes())
	case KindBool:
		if d.Bool() {
			s.MinI = 1
		}
		if d.Bool() {
			s.MaxI = 1
		}
	default:
		d.Fail(fmt.Sprintf("zone map kind %d", s.Kind))
	}
	return s
}

// Encode encodes the footer payload.
func (f *Footer) Encode(dst []byte) []byte {
	e := codec.Encoder{Buf: dst}
	e.Uvarint(footerVersion)
	e.Varint(f.CheckpointOffset)
	e.Uvarint(uint64(len(f.Batches)))
	for i := range f.Batches {
		b := &f.Batches[i]
		e.Varint(b.Offset)
		e.Varint(b.Len)
		e.String(b.Stream)
		e.Varint(b.First)
		e.Varint(b.Rows)
		e.Varint(b.TS)
		e.Uvarint(uint64(b.SchemaVersion))
		b.Stats.EncodeSparse(&e)
		e.Uvarint(uint64(len(b.Runs)))
		for _, r := range b.Runs {
			e.Varint(r.Rows)
			e.Varint(r.TS)
		}
	}
	return e.Buf
}

// Decode decodes a footer payload of file (named in errors); errors wrap
// storage's ErrCorruption.
func Decode(file string, p []byte) (*Footer, error) {
	d := codec.NewDecoder(p)
	v := d.Uvarint()
	if d.Err() == nil && v != footerVersion && v != footerVersionDense {
		return nil, fmt.Errorf("segment: %s: footer version %d: %w", file, v, base.ErrCorruption)
	}
	f := &Footer{CheckpointOffset: d.Varint()}
	// Each batch takes at least 9 bytes, which bounds the allocation.
	n := d.Count(d.Len() / 9)
	f.Batches = make([]Batch, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		var b Batch
		b.Offset = d.Varint()
		b.Len = d.Varint()
		b.Stream = d.String()
		b.First = d.Varint()
		b.Rows = d.Varint()
		b.TS = d.Varint()
		b.SchemaVersion = d.Count(1 << 30)
		if v == footerVersionDense {
			b.Stats = DecodeStatsList(d, b.Rows)
		} else {
			b.Stats = DecodeSparseStats(d, b.Rows)
		}
		nr := d.Count(d.Len() / 2)
		var sum int64
		for j := 0; j < nr && d.Err() == nil; j++ {
			r := Run{Rows: d.Varint(), TS: d.Varint()}
			if r.Rows <= 0 || (j > 0 && r.TS < b.Runs[j-1].TS) {
				return nil, fmt.Errorf("segment: %s: footer batch %d: invalid run %d: %w", file, i, j, base.ErrCorruption)
			}
			sum += r.Rows
			b.Runs = append(b.Runs, r)
		}
		if d.Err() == nil && (b.Offset < 0 || b.Len <= 0 || b.Rows <= 0 || b.First < 0 || (nr > 0 && sum != b.Rows)) {
			return nil, fmt.Errorf("segment: %s: footer batch %d: invalid extent: %w", file, i, base.ErrCorruption)
		}
		f.Batches = append(f.Batches, b)
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("segment: %s: footer: %v: %w", file, err, base.ErrCorruption)
	}
	return f, nil
}

// Trailer encodes the TRAILER payload pointing at the footer frame.
func Trailer(footerOffset int64) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(footerOffset))
	return append(b, TrailerMagic...)
}

// ParseTrailer returns the footer offset from a TRAILER payload.
func ParseTrailer(file string, p []byte) (int64, error) {
	if len(p) != 16 || string(p[8:]) != TrailerMagic {
		return 0, fmt.Errorf("segment: %s: bad trailer: %w", file, base.ErrCorruption)
	}
	off := int64(binary.LittleEndian.Uint64(p))
	if off < 0 {
		return 0, fmt.Errorf("segment: %s: bad footer offset: %w", file, base.ErrCorruption)
	}
	return off, nil
}
