package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/bqstore/bqstore/internal/storage/base"
)

// HeaderSize is the size of a frame header in bytes.
const HeaderSize = 24

// Align is the alignment of every frame and payload.
const Align = 8

// MaxPayload bounds a single frame's payload (1 GiB), so that a corrupt
// length can never make a reader allocate without bound.
const MaxPayload = 1 << 30

// Type is a record type. 0 is invalid.
type Type uint8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// PayloadCRC is the CRC-32C of a payload, the first half of a frame's
// checksum; Seal finishes it.
func PayloadCRC(payload []byte) uint32 { return crc32.Update(0, castagnoli, payload) }

// UpdateCRC extends a payload CRC over more payload bytes.
func UpdateCRC(crc uint32, more []byte) uint32 { return crc32.Update(crc, castagnoli, more) }

// FrameLen is the number of bytes a frame with an n-byte payload occupies,
// padding included.
func FrameLen(n int) int { return HeaderSize + pad8(n) }

func pad8(n int) int { return (n + Align - 1) &^ (Align - 1) }

// Seal writes the header of the frame in buf, whose payload is
// buf[HeaderSize:HeaderSize+n] and whose length is FrameLen(n); the
// padding bytes are zeroed. payloadCRC must be PayloadCRC(payload). The
// frame's synced offset is 0 (see SealSynced).
func Seal(buf []byte, typ Type, ts int64, n int, payloadCRC uint32) {
	SealSynced(buf, typ, ts, 0, n, payloadCRC)
}

// SealSynced is Seal recording synced, the file offset up to which the
// file was durable (fdatasynced) before the frame's group was written: an
// aligned offset no greater than the frame's own. A reader in
// SyncedOffsets mode uses it to tell a torn, never-synced tail from
// damage to synced data.
func SealSynced(buf []byte, typ Type, ts, synced int64, n int, payloadCRC uint32) {
	h := buf[:HeaderSize]
	binary.LittleEndian.PutUint32(h[4:], uint32(n))
	h[8] = byte(typ)
	putSynced(h[9:16], synced)
	binary.LittleEndian.PutUint64(h[16:], uint64(ts))
	clear(buf[HeaderSize+n : FrameLen(n)])
	binary.LittleEndian.PutUint32(h[0:], crc32.Update(payloadCRC, castagnoli, h[4:HeaderSize]))
}

// AppendFrame appends a complete frame (synced offset 0) to dst.
func AppendFrame(dst []byte, typ Type, ts int64, payload []byte) []byte {
	return AppendFrameSynced(dst, typ, ts, 0, payload)
}

// AppendFrameSynced appends a complete frame recording synced (see
// SealSynced) to dst.
func AppendFrameSynced(dst []byte, typ Type, ts, synced int64, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, FrameLen(len(payload)))...)
	copy(dst[start+HeaderSize:], payload)
	SealSynced(dst[start:], typ, ts, synced, len(payload), PayloadCRC(payload))
	return dst
}

func putSynced(b []byte, v int64) {
	for i := range 7 {
		b[i] = byte(v >> (8 * i))
	}
}

func getSynced(b []byte) int64 {
	var v int64
	for i := range 7 {
		v |= int64(b[i]) << (8 * i)
	}
	return v
}

// Frame is one decoded frame.
type Frame struct {
	Type Type
	// TS is the frame's timestamp, microseconds since the Unix epoch.
	TS int64
	// Offset is the file offset of the frame's header.
	Offset int64
	// Synced is the offset up to which the file was durable before the
	// frame's group was written (0 if the writer did not record it).
	Synced int64
	// Len is FrameLen(len(Payload)).
	Len int64
	// Payload aliases the reader's buffer: valid until the next call to
	// Next unless the reader was told to allocate per frame.
	Payload []byte
}

// CorruptionError reports bad bytes in the middle of a file.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, storage.ErrCorruption) hold.
func (e *CorruptionError) Unwrap() error { return base.ErrCorruption }

// TornError reports an incomplete or bad frame with no valid frame after
// it: the tail of an unacknowledged write cut short by a crash.
type TornError struct {
	File   string
	Offset int64
	Reason string
}

func (e *TornError) Error() string {
	return fmt.Sprintf("wal: torn tail in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// AsCorruption turns a torn tail into corruption, for files that must be
// complete (sealed segments).
func (e *TornError) AsCorruption() *CorruptionError {
	return &CorruptionError{File: e.File, Offset: e.Offset, Reason: e.Reason}
}

// Reader reads frames from an io.ReaderAt holding size bytes.
type Reader struct {
	r    io.ReaderAt
	size int64
	file string
	off  int64
	buf  []byte
	// Copy, if set, gives every frame its own payload slice.
	Copy bool
	// SyncedOffsets, if set, says the file's writer records in every
	// frame the offset synced before its group (SealSynced): damage at
	// offset X is then corruption only if a valid frame after it was
	// written after X had been synced (its Synced > X); valid frames of
	// the same never-synced group after a lost page are a torn tail. If
	// unset, any valid frame after the damage makes it corruption.
	SyncedOffsets bool
}

// NewReader reads frames of file (a name for errors) from offset start.
func NewReader(r io.ReaderAt, size int64, file string, start int64) *Reader {
	return &Reader{r: r, size: size, file: file, off: start}
}

// Offset is where the next frame starts (after a TornError: where the
// valid data ends).
func (r *Reader) Offset() int64 { return r.off }

// Next reads the next frame. It returns io.EOF at the clean end of data,
// *TornError for a torn tail, and *CorruptionError for mid-file
// corruption; after an error the reader stays at the bad frame.
func (r *Reader) Next() (Frame, error) {
	f, reason, err := r.readAt(r.off)
	if err != nil {
		return Frame{}, err
	}
	if reason == "" {
		r.off += f.Len
		return f, nil
	}
	if reason == "eof" {
		return Frame{}, io.EOF
	}
	bad := r.off
	accept := func(Frame) bool { return true }
	if r.SyncedOffsets {
		accept = func(f Frame) bool { return f.Synced > bad }
	}
	if next, ok := r.findValidAfter(r.off, accept); ok {
		if r.SyncedOffsets {
			return Frame{}, &CorruptionError{File: r.file, Offset: r.off,
				Reason: fmt.Sprintf("%s (a frame at offset %d written after offset %d was synced follows)", reason, next, bad)}
		}
		return Frame{}, &CorruptionError{File: r.file, Offset: r.off,
			Reason: fmt.Sprintf("%s (a valid frame follows at offset %d)", reason, next)}
	}
	return Frame{}, &TornError{File: r.file, Offset: r.off, Reason: reason}
}

// ReadAt decodes the frame at off, which must be valid (a frame the index
// points to); any defect is corruption.
func ReadAt(r io.ReaderAt, size int64, file string, off int64, buf []byte) (Frame, error) {
	rd := &Reader{r: r, size: size, file: file, buf: buf}
	f, reason, err := rd.readAt(off)
	if err != nil {
		return Frame{}, err
	}
	if reason != "" {
		return Frame{}, &CorruptionError{File: file, Offset: off, Reason: reason}
	}
	return f, nil
}

// readAt decodes the frame at off. A non-empty reason says why it is not
// a valid frame ("eof" for a clean end); err is an I/O error.
func (r *Reader) readAt(off int64) (Frame, string, error) {
	if off >= r.size {
		return Frame{}, "eof", nil
	}
	if off%Align != 0 {
		return Frame{}, "misaligned frame offset", nil
	}
	if r.size-off < HeaderSize {
		var h [HeaderSize]byte
		n := r.size - off
		if _, err := r.r.ReadAt(h[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return Frame{}, "", fmt.Errorf("wal: read %s at %d: %w", r.file, off, err)
		}
		if allZero(h[:n]) {
			return Frame{}, "eof", nil
		}
		return Frame{}, "short header", nil
	}
	var h [HeaderSize]byte
	if _, err := r.r.ReadAt(h[:], off); err != nil && !errors.Is(err, io.EOF) {
		return Frame{}, "", fmt.Errorf("wal: read %s at %d: %w", r.file, off, err)
	}
	if allZero(h[:]) {
		// Zeroed space is the end of written data only if everything
		// after it is zero too; otherwise it is a hole.
		return Frame{}, "zero header", nil
	}
	n := int64(binary.LittleEndian.Uint32(h[4:]))
	typ := Type(h[8])
	if typ == 0 {
		return Frame{}, "record type 0", nil
	}
	synced := getSynced(h[9:16])
	if synced > off || synced%Align != 0 {
		return Frame{}, "synced offset not an aligned offset before the frame", nil
	}
	if n > MaxPayload {
		return Frame{}, fmt.Sprintf("payload length %d exceeds the limit", n), nil
	}
	flen := int64(FrameLen(int(n)))
	if off+flen > r.size {
		return Frame{}, fmt.Sprintf("frame of %d bytes extends past the end of the file (%d bytes)", flen, r.size), nil
	}
	var payload []byte
	if r.Copy || int64(cap(r.buf)) < flen-HeaderSize {
		payload = make([]byte, flen-HeaderSize)
		if !r.Copy {
			r.buf = payload
		}
	} else {
		payload = r.buf[:flen-HeaderSize]
	}
	if _, err := r.r.ReadAt(payload, off+HeaderSize); err != nil && !errors.Is(err, io.EOF) {
		return Frame{}, "", fmt.Errorf("wal: read %s at %d: %w", r.file, off, err)
	}
	crc := crc32.Update(PayloadCRC(payload[:n]), castagnoli, h[4:HeaderSize])
	if crc != binary.LittleEndian.Uint32(h[0:]) {
		return Frame{}, "checksum mismatch", nil
	}
	if !allZero(payload[n:]) {
		return Frame{}, "padding not zero", nil
	}
	return Frame{
		Type:    typ,
		TS:      int64(binary.LittleEndian.Uint64(h[16:])),
		Offset:  off,
		Synced:  synced,
		Len:     flen,
		Payload: payload[:n:n],
	}, "", nil
}

// findValidAfter reports the offset of the first valid frame after off
// that accept accepts. It scans the rest of the file in 1 MiB blocks, checking candidate
// headers in memory and fully validating only those that pass the cheap
// filter, so that classifying a large torn tail stays fast.
func (r *Reader) findValidAfter(off int64, accept func(Frame) bool) (int64, bool) {
	probe := &Reader{r: r.r, size: r.size, file: r.file}
	const block = 1 << 20
	buf := make([]byte, block+HeaderSize)
	for base := off + Align; base+HeaderSize <= r.size; base += block {
		n := min(int64(len(buf)), r.size-base)
		if _, err := r.r.ReadAt(buf[:n], base); err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		for i := int64(0); i < block && i+HeaderSize <= n; i += Align {
			h := buf[i : i+HeaderSize]
			// Cheap filter before reading a payload.
			if h[8] == 0 {
				continue
			}
			if s := getSynced(h[9:16]); s > base+i || s%Align != 0 {
				continue
			}
			if int64(binary.LittleEndian.Uint32(h[4:])) > r.size-(base+i)-HeaderSize {
				continue
			}
			if f, reason, err := probe.readAt(base + i); err == nil && reason == "" && accept(f) {
				return base + i, true
			}
		}
	}
	return 0, false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
