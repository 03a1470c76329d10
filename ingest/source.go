package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Source yields the partitions to ingest. A file source has one partition;
// a Kafka source hands out partitions as the group assigns them.
type Source interface {
	// Run calls assign for every partition this process owns, each in its
	// own goroutine, with a context that ends when the partition is
	// revoked. Run returns when ctx ends, when an assign call fails (with
	// that error), or, for a finite source, when every assign call
	// returned. Run returns only after every assign call returned.
	Run(ctx context.Context, assign func(ctx context.Context, p Partition) error) error
	// Ledger returns where the source's partition states live, or nil when
	// the caller must provide one (files: a state directory).
	Ledger() Ledger
	// Single reports whether the source has exactly one partition.
	Single() bool
}

// Partition is one ordered, replayable sequence of records addressed by
// offsets of record boundaries.
type Partition interface {
	// Key identifies the partition in the ledger.
	Key() string
	// Open returns a reader positioned at offset from, which must be a
	// record boundary returned earlier (or 0).
	Open(ctx context.Context, from int64) (RecordReader, error)
}

// Revoker is implemented by partitions that can be given up gracefully
// (a Kafka cooperative revoke): Revoking is closed when the partition is
// being given up, while this process still owns it and before the
// partition's context ends. The worker then starts no new batch and
// seals nothing more; a batch already sealed is committed and marked DONE
// (crash table row 13, docs/ingest-protocol.md), and the worker returns.
type Revoker interface {
	Revoking() <-chan struct{}
}

// Ender is implemented by partitions that know their current end offset
// (file size, Kafka high watermark), for the lag metric.
type Ender interface {
	End() int64
}

// RecordReader reads records in order.
type RecordReader interface {
	// Next returns the next record and the offset just past it. The record
	// is valid until the next call. A nil record with a nil error is a
	// skip: offsets up to end hold no record (Kafka transaction markers),
	// and a batch range may end there. At the end of a finite partition it
	// returns io.EOF.
	Next(ctx context.Context) (rec []byte, end int64, err error)
	// Close releases the reader.
	Close() error
}

// FileSource is a newline-delimited JSON file (or standard input) as one
// partition whose offsets are byte offsets of line starts.
//
// Standard input cannot seek: after a restart the caller must feed the same
// input again, and the reader skips the bytes already ingested.
//
// A last line without a newline may be a record a writer is still
// appending: it is not read (the partition ends before it, and the reader
// reports an UnterminatedError, which is an io.EOF) unless Complete says
// the file will not grow. A later run, after the writer finished the line,
// reads it.
type FileSource struct {
	Path  string    // "-" for Stdin
	Stdin io.Reader // used when Path is "-"
	// Complete means the input is whole: a last line without a newline is
	// a record.
	Complete bool
}

// UnterminatedError ends a file partition whose last line has no newline
// (FileSource.Complete unset). It wraps io.EOF.
type UnterminatedError struct {
	Path   string
	Offset int64 // start of the unterminated line
	Bytes  int   // its length so far
}

func (e *UnterminatedError) Error() string {
	return fmt.Sprintf("ingest: %s: the last line (%d bytes at byte %d) has no newline yet: left for a later run (a writer may still be appending it; --complete ingests it)",
		e.Path, e.Bytes, e.Offset)
}

func (e *UnterminatedError) Unwrap() error { return io.EOF }

// Run implements Source: the file is one partition, run to its end.
func (s *FileSource) Run(ctx context.Context, assign func(ctx context.Context, p Partition) error) error {
	if s.Path == "" {
		return errors.New("ingest: file source needs a path")
	}
	return assign(ctx, filePartition{s})
}

// Ledger implements Source: files keep their state in a state directory.
func (s *FileSource) Ledger() Ledger { return nil }

// Single implements Source.
func (s *FileSource) Single() bool { return true }

type filePartition struct{ s *FileSource }

func (p filePartition) Key() string {
	if p.s.Path == "-" {
		return "file:-"
	}
	return "file:" + p.s.Path
}

// End implements Ender: the file's size (-1 for standard input).
func (p filePartition) End() int64 {
	if p.s.Path == "-" {
		return -1
	}
	st, err := os.Stat(p.s.Path)
	if err != nil {
		return -1
	}
	return st.Size()
}

func (p filePartition) Open(_ context.Context, from int64) (RecordReader, error) {
	if p.s.Path == "-" {
		if p.s.Stdin == nil {
			return nil, errors.New("ingest: no standard input")
		}
		r := &lineReader{r: bufio.NewReaderSize(p.s.Stdin, 1<<20), path: "standard input", complete: p.s.Complete}
		if from == 0 {
			if err := refuseCompressed(r.r, "standard input"); err != nil {
				return nil, err
			}
		}
		lines := &lineCounter{}
		if _, err := io.CopyN(lines, r.r, from); err != nil {
			return nil, fmt.Errorf("ingest: skip %d bytes of standard input already ingested: %w", from, err)
		}
		r.off, r.start = from, from
		r.base, r.baseKnown = lines.n, true
		return r, nil
	}
	f, err := os.Open(p.s.Path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if from > st.Size() {
		f.Close()
		return nil, fmt.Errorf("ingest: %s is %d bytes, shorter than the ingested offset %d (file replaced?)", p.s.Path, st.Size(), from)
	}
	if err := refuseCompressed(io.NewSectionReader(f, 0, st.Size()), p.s.Path); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("ingest: %w", err)
	}
	return &lineReader{r: bufio.NewReaderSize(f, 1<<20), c: f, f: f, off: from, start: from, baseKnown: from == 0,
		path: p.s.Path, complete: p.s.Complete}, nil
}

// MaxRecordBytes bounds one record (BigQuery's row size limit is 10 MB).
const MaxRecordBytes = 10 << 20

type lineReader struct {
	r        *bufio.Reader
	c        io.Closer
	f        io.ReaderAt // the file, to count the lines before start (nil: standard input)
	off      int64
	buf      []byte
	path     string
	complete bool // a last line without a newline is a record

	// Line numbers (Position): lines counts the lines read since start;
	// base is the number of lines before start, counted only when first
	// asked for (a resumed file does not pay for it otherwise).
	start     int64
	lines     int64
	base      int64
	baseKnown bool
	recStart  int64 // byte offset of the record Next returned last
}

func (l *lineReader) Next(ctx context.Context) ([]byte, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, l.off, err
		}
		l.buf = l.buf[:0]
		for {
			chunk, err := l.r.ReadSlice('\n')
			l.buf = append(l.buf, chunk...)
			if len(l.buf) > MaxRecordBytes {
				return nil, l.off, fmt.Errorf("ingest: %s line %d (byte %d): the record is longer than %d bytes", l.path, l.lineAt(1), l.off, MaxRecordBytes)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(l.buf) > 0 && l.complete {
					// A last line without a newline, in a complete file: a record.
					break
				}
				if len(l.buf) > 0 && len(trimSpace(trimEOL(l.buf))) > 0 {
					// Possibly half written: never consumed (not even
					// as a dead letter, which would split the record).
					return nil, l.off, &UnterminatedError{Path: l.path, Offset: l.off, Bytes: len(l.buf)}
				}
				return nil, l.off, io.EOF
			}
			if err != nil {
				return nil, l.off, fmt.Errorf("ingest: read: %w", err)
			}
			break
		}
		l.recStart = l.off
		l.off += int64(len(l.buf))
		l.lines++
		rec := trimEOL(l.buf)
		if len(trimSpace(rec)) == 0 {
			continue // blank lines are not records
		}
		return rec, l.off, nil
	}
}

// Position implements Positioner.
func (l *lineReader) Position() (line, start int64) {
	return l.lineAt(0), l.recStart
}

// lineAt is the 1-based number of the line read last, plus next (0 when it
// cannot be told).
func (l *lineReader) lineAt(next int64) int64 {
	if !l.baseKnown {
		n, err := countLines(l.f, l.start)
		if err != nil {
			return 0
		}
		l.base, l.baseKnown = n, true
	}
	return l.base + l.lines + next
}

// countLines counts the newlines in r's first n bytes.
func countLines(r io.ReaderAt, n int64) (int64, error) {
	if r == nil {
		return 0, errors.New("ingest: no file")
	}
	c := &lineCounter{}
	_, err := io.Copy(c, io.NewSectionReader(r, 0, n))
	return c.n, err
}

// lineCounter is an io.Writer that counts the newlines written to it.
type lineCounter struct{ n int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// Positioner is implemented by readers that can tell where the record Next
// returned last is (files): its 1-based line number (0 if unknown) and the
// byte offset of its line (blank lines before it excluded), for dead
// letters and errors.
type Positioner interface {
	Position() (line, start int64)
}

// compressed are the magic numbers of compressed formats a user may hand
// over by mistake: bqstore reads newline-delimited JSON only.
var compressed = []struct {
	magic []byte
	name  string
}{
	{[]byte{0x1f, 0x8b}, "gzip"},
	{[]byte{0x28, 0xb5, 0x2f, 0xfd}, "zstd"},
	{[]byte("BZh"), "bzip2"},
	{[]byte{0xfd, '7', 'z', 'X', 'Z', 0}, "xz"},
	{[]byte{0x04, 0x22, 0x4d, 0x18}, "lz4"},
	{[]byte("PK\x03\x04"), "zip"},
}

// ErrCompressed means the input is compressed: it is refused rather than
// read as lines of garbage that would all become dead letters.
var ErrCompressed = errors.New("ingest: compressed input")

// refuseCompressed returns an ErrCompressed error when the input starts
// with the magic number of a compressed format. r is a *bufio.Reader
// (peeked, nothing consumed) or an io.ReaderAt.
func refuseCompressed(r any, name string) error {
	head := make([]byte, 6)
	var n int
	switch r := r.(type) {
	case *bufio.Reader:
		// What one read brings (a pipe may hold less than a magic number
		// for a long time): Peek(1) fills the buffer once.
		_, _ = r.Peek(1)
		b, _ := r.Peek(min(len(head), r.Buffered()))
		n = copy(head, b)
	case io.ReaderAt:
		n, _ = r.ReadAt(head, 0)
	}
	head = head[:n]
	for _, c := range compressed {
		if bytes.HasPrefix(head, c.magic) {
			hint := "decompress it first"
			if c.name == "gzip" {
				hint = "decompress it first (gunzip -k), or pipe it in: gunzip -c FILE | bqstore ingest --source file:- ..."
			}
			return fmt.Errorf("%w: %s is %s-compressed, and ingest reads newline-delimited JSON only: %s", ErrCompressed, name, c.name, hint)
		}
	}
	return nil
}

func trimEOL(rec []byte) []byte {
	for len(rec) > 0 && (rec[len(rec)-1] == '\n' || rec[len(rec)-1] == '\r') {
		rec = rec[:len(rec)-1]
	}
	return rec
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func (l *lineReader) Close() error {
	if l.c != nil {
		return l.c.Close()
	}
	return nil
}

// RecordsGoneError is returned by a RecordReader when the records it must
// read next no longer exist at the source: a Kafka partition whose log
// start moved past them (retention, DeleteRecords) or whose end is now
// below them (the topic was recreated, or the broker lost data). The
// pipeline fails closed on it unless Config.SkipDeletedRecords is set
// (crash table row 17, docs/ingest-protocol.md).
type RecordsGoneError struct {
	Partition string
	// Want is the offset the reader had to read next.
	Want int64
	// Start and End are the partition's log start and end offsets when the
	// gap was found (-1 if they could not be listed).
	Start, End int64
	// Err is the source's error (Kafka: OFFSET_OUT_OF_RANGE, or the
	// client's ErrDataLoss).
	Err error
	// Truncated: the log was cut back below Want after the records before
	// it were read (Kafka: the leader's log for the epoch of the record
	// before Want ends at TruncatedTo, KIP-320; an unclean leader
	// election). Offsets from TruncatedTo on may now name other records.
	Truncated   bool
	TruncatedTo int64
}

func (e *RecordsGoneError) Error() string {
	switch {
	case e.Truncated:
		return fmt.Sprintf("ingest: partition %s: the log was truncated to offset %d below the state's offset %d (an unclean leader election?): records it covered are gone and the offsets may name other records now; refusing to read on (%v)",
			e.Partition, e.TruncatedTo, e.Want, e.Err)
	case e.Start > e.Want:
		return fmt.Sprintf("ingest: partition %s: records [%d, %d) were deleted (retention or DeleteRecords) before they were committed: refusing to skip them (%v)",
			e.Partition, e.Want, e.Start, e.Err)
	case e.End >= 0 && e.Want > e.End:
		return fmt.Sprintf("ingest: partition %s: offset %d is past the log end %d (topic recreated or broker data lost): refusing to guess (%v)",
			e.Partition, e.Want, e.End, e.Err)
	}
	return fmt.Sprintf("ingest: partition %s: offset %d is out of range (log start %d, end %d): refusing to guess (%v)",
		e.Partition, e.Want, e.Start, e.End, e.Err)
}

func (e *RecordsGoneError) Unwrap() error { return e.Err }

// Lost is how many records are known gone: from Want to the log start.
func (e *RecordsGoneError) Lost() int64 { return max(0, e.Start-e.Want) }
