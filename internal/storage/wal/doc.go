// Package wal is the frame format of every engine file: CRC-framed,
// 8-byte-aligned records, and a reader that tells a torn tail (an
// unacknowledged group cut short by a crash: truncate and continue) from
// corruption in the middle of a file (fail loudly, naming file and
// offset).
//
// # Frame layout
//
// All integers are little-endian. A frame starts at an 8-byte-aligned file
// offset:
//
//		 0       4       8   9         16                24
//		+-------+-------+---+----------+-----------------+----------------+-----+
//		| crc   | len   |typ| synced   | ts (int64, µs)  | payload (len)  | pad |
//		+-------+-------+---+----------+-----------------+----------------+-----+
//
//	  - crc: CRC-32C (Castagnoli) of payload followed by header bytes [4,24),
//	    i.e. crc32c.Update(crc32c(payload), header[4:24]). Putting the payload
//	    first lets an appender checksum its (large) payload concurrently while
//	    the single log writer stamps the timestamp and finishes the CRC over
//	    20 bytes.
//	  - len: payload length in bytes.
//	  - typ: record type, never 0 (an all-zero header is never valid, so
//	    zeroed space after the last frame reads as the end of the log).
//	  - synced: 7-byte little-endian offset up to which the file was
//	    durable (fdatasynced) before the frame's group was written; an
//	    aligned offset no greater than the frame's. Writers that do not
//	    track it write 0 (files of format v1 have 0 everywhere).
//	  - ts: the frame's timestamp in microseconds since the Unix epoch,
//	    stamped by the log writer (the group-commit time).
//	  - pad: zero bytes up to the next multiple of 8, so that a payload (and
//	    the Arrow buffers inside it, which are themselves 8-byte aligned)
//	    starts 8-byte aligned in the file.
//
// # Torn tail vs corruption
//
// Reader.Next returns io.EOF at a clean end of data. At a frame that is
// short, has an impossible header or a CRC mismatch (at offset X), it
// looks at the valid frames at later aligned offsets. Page writeback order
// is not guaranteed, so after a power loss a later frame of the last,
// never-synced group can be on disk while an earlier one is not; the
// synced field tells the two apart. In SyncedOffsets mode (the caller
// knows the file's writer records synced offsets), the damage is
// corruption (*CorruptionError, which wraps storage's ErrCorruption) only
// if some later valid frame has synced > X: X had been made durable
// before that frame was written. Otherwise (no later valid frame, or only
// frames written while X was not yet synced) it is a torn tail
// (*TornError): never acknowledged, the caller truncates the file at
// TornError.Offset. Without SyncedOffsets (old files), any later valid
// frame makes it corruption.
//
// The reader does not interpret payloads; the record types and payloads of
// the table log are documented in package storage and docs/format/wal.md.
package wal
