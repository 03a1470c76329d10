package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// StartPosition says where a partition without a stored state starts. The
// zero value is unset: such a partition stops the run with ErrNoStart, so
// a lost state (a wiped state directory, Kafka offsets expired after the
// group sat empty for offsets.retention.minutes) is never a silent replay
// of the whole source, nor a silent skip.
type StartPosition struct {
	kind   startKind
	offset int64
	at     time.Time
}

type startKind int

const (
	startUnset startKind = iota
	startEarliest
	startLatest
	startOffset
	startTime
)

// StartEarliest starts at the beginning of the partition (Kafka: its log
// start; files: byte 0).
var StartEarliest = StartPosition{kind: startEarliest}

// StartLatest starts at the end: only records written after the start are
// ingested (Kafka: the log end; files: past the last complete line).
var StartLatest = StartPosition{kind: startLatest}

// StartAtOffset starts at a source offset (Kafka: a record offset within
// the log; files: a byte offset at a line start).
func StartAtOffset(off int64) StartPosition { return StartPosition{kind: startOffset, offset: off} }

// StartAtTime starts at the first Kafka record whose timestamp is at or
// after t (files have no time index).
func StartAtTime(t time.Time) StartPosition { return StartPosition{kind: startTime, at: t} }

// ParseStart parses earliest, latest, an offset, or an RFC 3339 time.
func ParseStart(s string) (StartPosition, error) {
	switch s {
	case "earliest":
		return StartEarliest, nil
	case "latest":
		return StartLatest, nil
	}
	if off, err := strconv.ParseInt(s, 10, 64); err == nil {
		if off < 0 {
			return StartPosition{}, fmt.Errorf("start offset %d is negative", off)
		}
		return StartAtOffset(off), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return StartAtTime(t), nil
	}
	return StartPosition{}, fmt.Errorf("start %q: want earliest, latest, an offset or an RFC 3339 time", s)
}

// IsSet reports whether a position was given.
func (s StartPosition) IsSet() bool { return s.kind != startUnset }

func (s StartPosition) String() string {
	switch s.kind {
	case startEarliest:
		return "earliest"
	case startLatest:
		return "latest"
	case startOffset:
		return strconv.FormatInt(s.offset, 10)
	case startTime:
		return s.at.Format(time.RFC3339Nano)
	}
	return "unset"
}

// ErrNoStart means a partition has no stored state and no StartPosition
// says where it begins.
var ErrNoStart = errors.New("ingest: no stored state and no start position")

// Starter is implemented by partitions that can resolve a StartPosition
// to an offset (a record boundary).
type Starter interface {
	StartOffset(ctx context.Context, s StartPosition) (int64, error)
}

// noStartError explains what to pass.
func noStartError(partition, why string) error {
	return fmt.Errorf("%w: partition %s has no stored state (%s): refusing to guess where to start; "+
		"add --start earliest to ingest it from the beginning (or --start latest, --start <offset>, --start <RFC 3339 time>; Config.Start)",
		ErrNoStart, partition, why)
}

// StartOffset implements Starter for files: earliest is byte 0, latest
// is past the last complete line, an offset must start a line.
func (p filePartition) StartOffset(_ context.Context, s StartPosition) (int64, error) {
	switch s.kind {
	case startEarliest:
		return 0, nil
	case startTime:
		return 0, fmt.Errorf("ingest: --start %s: a file has no time index: use earliest, latest or a byte offset", s)
	}
	if p.s.Path == "-" {
		return 0, fmt.Errorf("ingest: --start %s: standard input can only start at the beginning (earliest)", s)
	}
	f, err := os.Open(p.s.Path)
	if err != nil {
		return 0, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("ingest: %w", err)
	}
	size := st.Size()
	switch s.kind {
	case startLatest:
		// Past the last complete line (a half-written one is read once
		// its newline arrives): scan back from the end.
		buf := make([]byte, 64<<10)
		for end := size; end > 0; {
			n := min(end, int64(len(buf)))
			if _, err := f.ReadAt(buf[:n], end-n); err != nil {
				return 0, fmt.Errorf("ingest: %w", err)
			}
			if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
				return end - n + int64(i) + 1, nil
			}
			end -= n
		}
		return 0, nil
	case startOffset:
		if s.offset > size {
			return 0, fmt.Errorf("ingest: --start %d: past the end of %s (%d bytes)", s.offset, p.s.Path, size)
		}
		if s.offset > 0 {
			var b [1]byte
			if _, err := f.ReadAt(b[:], s.offset-1); err != nil {
				return 0, fmt.Errorf("ingest: %w", err)
			}
			if b[0] != '\n' {
				return 0, fmt.Errorf("ingest: --start %d: not the start of a line of %s", s.offset, p.s.Path)
			}
		}
		return s.offset, nil
	}
	return 0, fmt.Errorf("ingest: start position %s is not supported", s)
}
