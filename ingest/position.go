package ingest

import "fmt"

// This file renders where a record or a partition is for people: dead
// letters, errors and log lines say "line 7 (byte 56)" and "partition idle
// at byte 48173, batch 2", not offsets and state literals alone.

// position adds to d, the dead letter of the record the reader returned
// last, the record's line and the start of its line (past the blank lines
// before it), when the reader can tell them (files).
func (w *worker) position(d *pendingDeadLetter) {
	if p, ok := w.reader.(Positioner); ok {
		line, start := p.Position()
		d.line = line
		if start >= d.offset {
			d.offset = start
		}
	}
}

// where names the record the reader returned last, which starts at recAt:
// "file:events.ndjson line 7 (byte 56)", or "PARTITION offset N".
func (w *worker) where(recAt int64) string {
	if p, ok := w.reader.(Positioner); ok {
		if line, start := p.Position(); line > 0 {
			return fmt.Sprintf("%s line %d (byte %d)", w.key, line, max(start, recAt))
		}
	}
	return fmt.Sprintf("%s offset %d", w.key, recAt)
}

// offsetUnit is what a partition's offsets count: bytes in a file,
// records in Kafka.
func offsetUnit(key string) string {
	if len(key) >= 5 && key[:5] == "file:" {
		return "byte"
	}
	return "offset"
}

// describeState is the log message for a partition's state when its worker
// starts: "partition idle at byte 48173, batch 2", or for a batch sealed
// but not known committed "partition sealed batch 3 (bytes 100 to 200, 2
// streams): finishing its commit".
func describeState(key string, st State) string {
	unit := offsetUnit(key)
	if !st.Sealed {
		return fmt.Sprintf("partition idle at %s %d, batch %d", unit, st.Offset, st.Batch)
	}
	return fmt.Sprintf("partition sealed batch %d (%ss %d to %d, %d streams): finishing its commit",
		st.Batch, unit, st.Offset, st.To, len(st.Streams))
}

// unterminated is the log message for a last line left for a later run:
// "line 7 (byte 56) has no newline yet: not ingested (--complete ingests
// it)".
func (w *worker) unterminated(ut *UnterminatedError) string {
	where := fmt.Sprintf("byte %d", ut.Offset)
	if p, ok := w.reader.(Positioner); ok {
		if line, _ := p.Position(); line >= 0 {
			where = fmt.Sprintf("line %d (byte %d)", line+1, ut.Offset)
		}
	}
	return "the last line, " + where + ", has no newline yet: not ingested until it is complete (--complete ingests it now)"
}

// partitionDone is the log message of a finite partition read to its end:
// "partition done at byte 48173, 3 batches".
func partitionDone(key string, off int64, batches uint64) string {
	unit := "batches"
	if batches == 1 {
		unit = "batch"
	}
	return fmt.Sprintf("partition done at %s %d, %d %s", offsetUnit(key), off, batches, unit)
}
