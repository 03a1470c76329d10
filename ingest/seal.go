package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// MaxStateBytes is the largest encoded State: real Kafka's default
// offset.metadata.max.bytes. The file ledger keeps the same bound so a
// configuration that works on files also works on Kafka.
const MaxStateBytes = 4096

// maxOwnerBytes bounds State.Owner.
const maxOwnerBytes = 64

// ErrStateTooLarge means a seal names more streams than fit in MaxStateBytes.
var ErrStateTooLarge = errors.New("ingest: encoded partition state exceeds 4096 bytes")

// State is the durable state of one source partition: the only record that
// decides what is committed (docs/ingest-protocol.md, "The state of a
// partition").
//
// Offset is always the first source offset not yet durably in BigQuery. A
// state is IDLE (Sealed false: start reading at Offset) or SEALED (the
// streams hold exactly the rows of the source range [Offset, To) and may be
// committed by anyone; nothing else for that range may ever be committed).
type State struct {
	Batch   uint64         // number of the batch this state closes (IDLE) or seals (SEALED)
	Offset  int64          // X
	Sealed  bool           // SEALED when true
	To      int64          // Y, SEALED only; To >= Offset
	Streams []SealedStream // SEALED only
	// DeadLetterEnd is the size of the dead-letter file once the batch's
	// dead letters are durable; recovery truncates the file to it so a
	// replayed range does not write its dead letters twice. -1: no file sink.
	DeadLetterEnd int64
	// Generation is the Kafka group generation the state was written under
	// (informational: the broker fences it). 0 for files.
	Generation int32
	// Owner is a token of the pipeline run that wrote the state (random per
	// run). After an ambiguous Store, a read-back is ours only if it equals
	// what we wrote, owner included (docs/ingest-protocol.md, rule 1): a new owner that
	// computed the same batch and offset writes its own token and streams.
	Owner string

	// Config identifies the destination the state was written for (a hash
	// of the table names, Pipeline.configID), so a run writing elsewhere
	// cannot take this state's offset as its own: changing --table with
	// the same state dir or group would skip every range already
	// committed to the old table. Empty in states written before it
	// existed.
	Config string

	// Source identifies the source as read up to Offset (files: absolute
	// path, device:inode, hash of the consumed prefix's ends; see
	// filePartition.identity), so a rotated or replaced file fails closed
	// instead of being read on at Offset. Empty when the source has none.
	Source string

	// Missing is set by Load when no state was ever stored for the
	// partition (never encoded): the worker starts it at Config.Start.
	Missing bool
	// PeersWithState, with Missing, counts the other partitions of the
	// source that do have a state (Kafka): this one's was lost, or the
	// partition is new (never encoded).
	PeersWithState int
}

// sameState reports whether a and b are the same state, ignoring the
// generation (the ledger sets it when storing) and PeersWithState (Load's
// count of the other partitions, which changes as they store theirs: a
// partition still without a state read back after an ambiguous Store is
// the state loaded before, not another owner's).
func sameState(a, b State) bool {
	a.Generation, b.Generation = 0, 0
	a.PeersWithState, b.PeersWithState = 0, 0
	a.Config, b.Config = "", "" // set by worker.store on every write
	a.Source, b.Source = "", ""
	if len(a.Streams) == 0 && len(b.Streams) == 0 {
		a.Streams, b.Streams = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// SealedStream is one finalized PENDING stream of a seal.
type SealedStream struct {
	Table int    // index into the pipeline's tables
	ID    string // the last path element of the stream name
	Rows  int64  // row_count returned by FinalizeWriteStream
}

// wireState is the compact, versioned JSON form:
//
//	IDLE   {"v":1,"b":7,"x":1234,"o":"9f2c4e1a0b3d5c7e"}
//	SEALED {"v":1,"b":8,"x":1234,"to":5678,"te":3,"s":[{"t":0,"id":"...","n":100}],"dl":77,"o":"9f2c4e1a0b3d5c7e"}
//
// te (Kafka, SEALED only) is the leader epoch of the range's last record:
// the DONE that a recovery stores at "to" commits it (KIP-320) without
// having read the range.
type wireState struct {
	V   int          `json:"v"`
	B   uint64       `json:"b"`
	X   int64        `json:"x"`
	G   int32        `json:"g,omitempty"`
	To  *int64       `json:"to,omitempty"`
	TE  *int32       `json:"te,omitempty"`
	S   []wireStream `json:"s,omitempty"`
	DL  *int64       `json:"dl,omitempty"`
	O   string       `json:"o,omitempty"`
	C   string       `json:"c,omitempty"`
	Src string       `json:"src,omitempty"`
}

type wireStream struct {
	T  int    `json:"t"`
	ID string `json:"id"`
	N  int64  `json:"n"`
}

// Encode returns the compact form of s, at most MaxStateBytes long.
func (s State) Encode() ([]byte, error) { return s.encode(-1) }

// encode is Encode with toEpoch, the leader epoch of the record before To,
// written in a seal when known (>= 0).
func (s State) encode(toEpoch int32) ([]byte, error) {
	if len(s.Owner) > maxOwnerBytes {
		return nil, fmt.Errorf("ingest: state owner token %q is longer than %d bytes", s.Owner, maxOwnerBytes)
	}
	if len(s.Config) > maxOwnerBytes {
		return nil, fmt.Errorf("ingest: state config id %q is longer than %d bytes", s.Config, maxOwnerBytes)
	}
	w := wireState{V: 1, B: s.Batch, X: s.Offset, G: s.Generation, O: s.Owner, C: s.Config, Src: s.Source}
	if s.DeadLetterEnd >= 0 {
		w.DL = &s.DeadLetterEnd
	}
	if s.Sealed {
		if s.To < s.Offset {
			return nil, fmt.Errorf("ingest: seal range [%d, %d) is inverted", s.Offset, s.To)
		}
		w.To = &s.To
		if toEpoch >= 0 {
			w.TE = &toEpoch
		}
		for _, st := range s.Streams {
			if st.ID == "" || strings.Contains(st.ID, "/") {
				return nil, fmt.Errorf("ingest: seal stream id %q is not a bare id", st.ID)
			}
			w.S = append(w.S, wireStream{T: st.Table, ID: st.ID, N: st.Rows})
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxStateBytes {
		return nil, fmt.Errorf("%w (%d bytes, %d streams)", ErrStateTooLarge, len(b), len(s.Streams))
	}
	return b, nil
}

// DecodeState parses the compact form. Empty input is the initial state
// (IDLE at offset 0).
func DecodeState(b []byte) (State, error) {
	s, _, err := decodeState(b)
	return s, err
}

// decodeState is DecodeState that also returns a seal's leader epoch of
// the record before To (-1: not recorded).
func decodeState(b []byte) (State, int32, error) {
	if len(b) == 0 {
		return State{DeadLetterEnd: -1}, -1, nil
	}
	var w wireState
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return State{}, -1, fmt.Errorf("ingest: partition state %q: %w", truncate(b), err)
	}
	if w.V != 1 {
		return State{}, -1, fmt.Errorf("ingest: partition state version %d is not supported", w.V)
	}
	s := State{Batch: w.B, Offset: w.X, Generation: w.G, DeadLetterEnd: -1, Owner: w.O, Config: w.C, Source: w.Src}
	if w.X < 0 {
		return State{}, -1, fmt.Errorf("ingest: partition state offset %d is negative", w.X)
	}
	if w.DL != nil {
		s.DeadLetterEnd = *w.DL
	}
	toEpoch := int32(-1)
	if w.To != nil {
		s.Sealed, s.To = true, *w.To
		if s.To < s.Offset {
			return State{}, -1, fmt.Errorf("ingest: seal range [%d, %d) is inverted", s.Offset, s.To)
		}
		for _, st := range w.S {
			if st.ID == "" || st.N < 0 || st.T < 0 {
				return State{}, -1, fmt.Errorf("ingest: seal stream %+v is invalid", st)
			}
			s.Streams = append(s.Streams, SealedStream{Table: st.T, ID: st.ID, Rows: st.N})
		}
		if w.TE != nil && *w.TE >= 0 {
			toEpoch = *w.TE
		}
	} else if len(w.S) > 0 || w.TE != nil {
		return State{}, -1, fmt.Errorf("ingest: IDLE state names streams or a seal's epoch")
	}
	return s, toEpoch, nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

func (s State) String() string {
	if !s.Sealed {
		return fmt.Sprintf("IDLE{b:%d x:%d}", s.Batch, s.Offset)
	}
	return fmt.Sprintf("SEALED{b:%d [%d,%d) streams:%d}", s.Batch, s.Offset, s.To, len(s.Streams))
}
