package protorows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"

	"github.com/bqstore/bqstore/internal/jsoncanon"
	"github.com/bqstore/bqstore/internal/schema"
)

// valueError is a bad value in a row: the row error's field and message.
type valueError struct {
	field string
	msg   string
}

func (e *valueError) Error() string { return e.msg }

func badValue(fp *fieldPlan, format string, args ...any) error {
	return &valueError{field: fp.path, msg: fmt.Sprintf("Field %s: ", fp.path) + fmt.Sprintf(format, args...)}
}

// maxDurationSeconds keeps a Duration in int64 nanoseconds.
const maxDurationSeconds = math.MaxInt64/1000000000 - 1

// maxRowErrors bounds the row errors one request reports.
const maxRowErrors = 1000

// decodeState is per-call state threaded through the decoder.
type decodeState struct {
	d     *Decoder
	mv    MissingValues
	top   []Interpretation // per top-level column, when mv.PerColumn is set
	now   time.Time
	nowOK bool
	// values counts the values the request decodes to, bounded by
	// MaxValues: rows x values per row, plus repeated elements.
	values int
}

func (s *decodeState) clock() time.Time {
	if !s.nowOK {
		if s.d.Now != nil {
			s.now = s.d.Now()
		} else {
			s.now = time.Now()
		}
		s.nowOK = true
	}
	return s.now
}

// Decode decodes serialized rows (AppendRowsRequest.proto_rows.rows) into
// one record of Schema(): every table column in table order, columns the
// writer schema lacks filled as missing values under mv. If any row is bad
// (an unparsable message, a value the column cannot hold, a REQUIRED column
// left unset) Decode returns the row errors and no record: the Write API
// appends nothing of such a request. The error result is reserved for
// conditions that are not a row's fault (none today beyond a record too
// large to address with 32-bit offsets).
//
// The caller owns the returned record and must Release it.
func (d *Decoder) Decode(rows [][]byte, mv MissingValues) (arrow.Record, []RowError, error) {
	n := len(rows)
	if d.valuesPerRow > 0 && n > MaxValues/d.valuesPerRow {
		return nil, nil, fmt.Errorf("%w: %d rows of %d values each, the limit is %d values", ErrTooManyValues, n, d.valuesPerRow, MaxValues)
	}
	st := &decodeState{d: d, mv: mv, values: n * d.valuesPerRow}
	if len(mv.PerColumn) > 0 {
		st.top = mv.Resolve(d.table.Fields)
	}
	total := 0
	for _, r := range rows {
		total += len(r)
	}
	rowsCap, varHint := d.reserve(n, total)
	cols := make([]*Column, len(d.table.Fields))
	for i, f := range d.arrow.Fields() {
		cols[i] = NewColumn(f.Type, rowsCap, varHint[i])
	}
	var rowErrs []RowError
	good := 0 // rows appended so far; a bad row is rolled back
	for i, r := range rows {
		if err := st.message(d.root, r, cols); err != nil {
			if errors.Is(err, ErrTooManyValues) {
				return nil, nil, err
			}
			if len(rowErrs) < maxRowErrors {
				re := RowError{Index: i, Message: err.Error()}
				if ve, ok := err.(*valueError); ok {
					re.Field = ve.field
				}
				rowErrs = append(rowErrs, re)
			}
			// Keep the columns aligned so later rows can still be checked.
			for _, c := range cols {
				c.Truncate(good)
			}
			continue
		}
		good++
	}
	if len(rowErrs) > 0 {
		return nil, rowErrs, nil
	}
	for i, c := range cols {
		if n > 0 && d.perRow != nil {
			d.perRow[i] = float64(c.dataBytes()) / float64(n)
		}
		if c.DataLen() > math.MaxInt32 || c.Len() != n {
			return nil, nil, fmt.Errorf("protorows: column %s: request too large for one record", d.table.Fields[i].Name)
		}
	}
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		data := c.Finish()
		arrs[i] = array.MakeFromData(data)
		data.Release()
	}
	rec := array.NewRecordBatch(d.arrow, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec, nil, nil
}

// reserve sizes a request's columns: the values to reserve in each
// fixed-width buffer, and the variable-length bytes for each column. Both
// are bounded by the request's own size: every value present costs at least
// a byte on the wire and expands to at most 32, so four times the request
// (plus a little) holds the fixed-width buffers of any dense request, and a
// sparse one grows its buffers as it fills them. The variable-length data
// of the previous request per row predicts how this request's bytes divide
// among the columns, never how many there are: they sum to at most the
// request's bytes. (Sizing by the previous request alone reserved 10 rows
// of 900 KB's bytes per row for the next 100,000 rows of 10 bytes.)
func (d *Decoder) reserve(n, total int) (rows int, varHint []int) {
	rows = n
	if budget := 4*total + 64<<10; d.fixedPerRow > 0 && n > budget/d.fixedPerRow {
		rows = budget / d.fixedPerRow
	}
	varHint = make([]int, len(d.table.Fields))
	if d.nvar == 0 || n == 0 {
		return rows, varHint
	}
	if d.perRow == nil {
		// First request: share its size among the columns that hold
		// variable-length data.
		d.perRow = make([]float64, len(varHint))
		for i, f := range d.arrow.Fields() {
			if hasVarData(f.Type) {
				d.perRow[i] = float64(total) / float64(d.nvar) / float64(n)
			}
		}
	}
	sum := 0.0
	for _, p := range d.perRow {
		sum += p * float64(n)
	}
	scale := 1.0
	if sum > float64(total) {
		scale = float64(total) / sum
	}
	for i, p := range d.perRow {
		if p > 0 {
			varHint[i] = int(p*float64(n)*scale) + 64
		}
	}
	return rows, varHint
}

// resolveLookups counts the key lookups made resolving missing-value
// interpretations (one per key and one per column a request resolves), so
// that a test can check the cost is linear, not rows x columns x keys,
// without timing anything.
var resolveLookups atomic.Int64

// Resolve returns the missing-value interpretation of each of fields (a
// table's top-level columns) under mv: a key naming the column exactly,
// else one naming it case-insensitively, else mv.Default. Linear in keys
// and columns: decoders resolve once per request, not per row and column.
func (mv MissingValues) Resolve(fields []*schema.Field) []Interpretation {
	resolveLookups.Add(int64(len(mv.PerColumn) + len(fields)))
	folded := make(map[string]Interpretation, len(mv.PerColumn))
	for k, v := range mv.PerColumn {
		fk := schema.FoldKey(k)
		if prev, dup := folded[fk]; !dup || v < prev {
			folded[fk] = v // deterministic when keys differ only in case
		}
	}
	out := make([]Interpretation, len(fields))
	for i, f := range fields {
		if v, ok := mv.PerColumn[f.Name]; ok {
			out[i] = v
		} else if v, ok := folded[schema.FoldKey(f.Name)]; ok {
			out[i] = v
		} else {
			out[i] = mv.Default
		}
	}
	return out
}

var errMalformed = &valueError{msg: "Row is not a valid protocol buffer message"}

// message decodes one message of plan p, appending one value to each of
// cols (the record's columns).
func (s *decodeState) message(p *msgPlan, b []byte, cols []*Column) error {
	for i := range p.slots {
		p.slots[i].set = false
	}
	for len(b) > 0 {
		var num protowire.Number
		var wt protowire.Type
		if b[0] < 0x80 {
			num, wt = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
			b = b[1:]
		} else {
			var n int
			num, wt, n = protowire.ConsumeTag(b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
		}
		fp := p.lookup(num)
		if fp == nil {
			// A field the writer schema does not declare: skip it, as
			// proto parsers keep unknown fields out of the message.
			n := protowire.ConsumeFieldValue(num, wt, b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
			continue
		}
		var u uint64
		var v []byte
		switch wt {
		case protowire.VarintType:
			if len(b) > 0 && b[0] < 0x80 {
				u = uint64(b[0])
				b = b[1:]
			} else {
				x, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return errMalformed
				}
				u, b = x, b[n:]
			}
		case protowire.Fixed64Type:
			if len(b) < 8 {
				return errMalformed
			}
			u = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
			b = b[8:]
		case protowire.Fixed32Type:
			if len(b) < 4 {
				return errMalformed
			}
			u = uint64(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
			b = b[4:]
		case protowire.BytesType:
			var l uint64
			if len(b) > 0 && b[0] < 0x80 {
				l = uint64(b[0])
				b = b[1:]
			} else {
				x, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return errMalformed
				}
				l, b = x, b[n:]
			}
			if l > uint64(len(b)) {
				return errMalformed
			}
			v, b = b[:l], b[l:]
		default:
			return errMalformed // groups and invalid wire types
		}
		if fp.repeated {
			elem := cols[fp.col].child[0]
			if s.values += fp.elemValues; s.values > MaxValues {
				return fmt.Errorf("%w: more than %d values", ErrTooManyValues, MaxValues)
			}
			if wt == protowire.BytesType && fp.wt != protowire.BytesType {
				if err := s.packed(fp, v, elem); err != nil {
					return err
				}
				continue
			}
			if wt != fp.wt {
				return badValue(fp, "wire type %d does not match the descriptor's %s", wt, fp.ptype)
			}
			if err := s.value(fp, wt, u, v, elem); err != nil {
				return err
			}
			continue
		}
		if wt != fp.wt {
			return badValue(fp, "wire type %d does not match the descriptor's %s", wt, fp.ptype)
		}
		sl := &p.slots[fp.col]
		sl.set, sl.wt, sl.u, sl.b = true, wt, u, v
	}
	for i := range p.cols {
		cp := &p.cols[i]
		c := cols[i]
		if cp.repeated {
			if c.child[0].n == int(c.offs[len(c.offs)-1]) && cp.def != nil && s.interp(cp) == DefaultValue {
				if err := s.appendDefault(cp, c); err != nil {
					return err
				}
				continue
			}
			c.CloseList()
			continue
		}
		sl := &p.slots[i]
		if sl.set {
			if err := s.value(cp.fp, sl.wt, sl.u, sl.b, c); err != nil {
				return err
			}
			continue
		}
		if cp.fp != nil && cp.fp.def != nil {
			if err := s.value(cp.fp, cp.fp.def.wt, cp.fp.def.u, cp.fp.def.b, c); err != nil {
				return err
			}
			continue
		}
		if err := s.missing(cp, c); err != nil {
			return err
		}
	}
	return nil
}

func (s *decodeState) interp(cp *colPlan) Interpretation {
	if cp.top && s.top != nil {
		return s.top[cp.idx]
	}
	return s.mv.Default
}

// missing fills an unset column: its default under DEFAULT_VALUE, else
// NULL, which a REQUIRED column refuses.
func (s *decodeState) missing(cp *colPlan, c *Column) error {
	if cp.def != nil && s.interp(cp) == DefaultValue {
		return s.appendDefault(cp, c)
	}
	if cp.required {
		return &valueError{field: cp.path, msg: fmt.Sprintf("Field %s is REQUIRED but has no value", cp.path)}
	}
	c.AppendNull()
	return nil
}

func (s *decodeState) appendDefault(cp *colPlan, c *Column) error {
	v, err := cp.def.Eval(s.clock())
	if err != nil {
		return &valueError{field: cp.path, msg: fmt.Sprintf("Field %s: default value: %v", cp.path, err)}
	}
	if v == nil && cp.required {
		return &valueError{field: cp.path, msg: fmt.Sprintf("Field %s is REQUIRED but its default value is NULL", cp.path)}
	}
	if err := AppendValue(c, v); err != nil {
		return &valueError{field: cp.path, msg: fmt.Sprintf("Field %s: default value: %v", cp.path, err)}
	}
	return nil
}

// packed decodes a packed repeated scalar field.
func (s *decodeState) packed(fp *fieldPlan, b []byte, elem *Column) error {
	for len(b) > 0 {
		if s.values++; s.values > MaxValues {
			return fmt.Errorf("%w: more than %d values", ErrTooManyValues, MaxValues)
		}
		var u uint64
		switch fp.wt {
		case protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errMalformed
			}
			u, b = x, b[n:]
		case protowire.Fixed64Type:
			x, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return errMalformed
			}
			u, b = x, b[n:]
		case protowire.Fixed32Type:
			x, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return errMalformed
			}
			u, b = uint64(x), b[n:]
		}
		if err := s.value(fp, fp.wt, u, nil, elem); err != nil {
			return err
		}
	}
	return nil
}

// intOf reads an integer-kind field as int64.
func intOf(t dtype, u uint64) int64 {
	switch t {
	case tInt32, tEnum, tSfixed32:
		return int64(int32(u))
	case tUint32, tFixed32:
		return int64(uint32(u))
	case tSint32:
		return int64(int32(protowire.DecodeZigZag(u & math.MaxUint32)))
	case tSint64:
		return protowire.DecodeZigZag(u)
	case tBool:
		if u != 0 {
			return 1
		}
		return 0
	}
	return int64(u) // int64, uint64, fixed64, sfixed64
}

func isUnsigned(t dtype) bool { return t == tUint64 || t == tFixed64 }

func floatOf(t dtype, u uint64) float64 {
	if t == tFloat {
		return float64(math.Float32frombits(uint32(u)))
	}
	return math.Float64frombits(u)
}

// quote renders a value for a row error message, shortened.
func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

// value converts one raw field value and appends it to c.
func (s *decodeState) value(fp *fieldPlan, wt protowire.Type, u uint64, b []byte, c *Column) error {
	if fp.prec != 0 || fp.scale != 0 {
		switch fp.op {
		case opNumInt, opNumFloat, opNumStr, opNumBytes, opBigNumInt, opBigNumFloat, opBigNumStr, opBigNumBytes:
			return s.constrained(fp, wt, u, b, c)
		}
	}
	switch fp.op {
	case opInt64:
		c.AppendInt64(intOf(fp.ptype, u))
	case opFloat64:
		c.AppendFloat64(floatOf(fp.ptype, u))
	case opString:
		if !utf8.Valid(b) {
			return badValue(fp, "STRING value is not valid UTF-8")
		}
		if fp.maxLen > 0 && utf8.RuneCount(b) > fp.maxLen {
			return badValue(fp, "STRING value %s is longer than its maximum length %d", quote(b), fp.maxLen)
		}
		c.AppendBytes(b)
	case opBytes:
		if fp.maxLen > 0 && len(b) > fp.maxLen {
			return badValue(fp, "BYTES value of %d bytes is longer than its maximum length %d", len(b), fp.maxLen)
		}
		c.AppendBytes(b)
	case opBool:
		c.AppendBool(u != 0)
	case opEnumName:
		name, ok := fp.enum[int32(u)]
		if !ok {
			return badValue(fp, "enum value %d is not defined", int32(u))
		}
		if fp.maxLen > 0 && utf8.RuneCountInString(name) > fp.maxLen {
			return badValue(fp, "STRING value %q is longer than its maximum length %d", name, fp.maxLen)
		}
		c.AppendString(name)
	case opTsInt:
		v := intOf(fp.ptype, u)
		if v < MinMicros || v > MaxMicros {
			return badValue(fp, "TIMESTAMP value %d is out of range (microseconds since the epoch, 0001-01-01 to 9999-12-31)", v)
		}
		c.AppendInt64(v)
	case opTsStr:
		v, err := ParseTimestamp(string(b))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendInt64(v)
	case opTsMsg:
		sec, nanos, err := secondsNanos(b)
		if err != nil {
			return badValue(fp, "invalid google.protobuf.Timestamp: %v", err)
		}
		if nanos < 0 || nanos > 999999999 {
			return badValue(fp, "invalid google.protobuf.Timestamp: nanos %d out of range", nanos)
		}
		if sec < MinMicros/1000000 || sec > MaxMicros/1000000 {
			return badValue(fp, "TIMESTAMP value %s is out of range", time.Unix(sec, int64(nanos)).UTC().Format(time.RFC3339Nano))
		}
		c.AppendInt64(sec*1000000 + int64(nanos)/1000)
	case opDateInt:
		v := intOf(fp.ptype, u)
		if v < MinDate || v > MaxDate {
			return badValue(fp, "DATE value %d is out of range (days since the epoch, %d to %d)", v, MinDate, MaxDate)
		}
		c.AppendInt32(int32(v))
	case opDateStr:
		v, err := ParseDate(string(b))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendInt32(v)
	case opDatetimePacked:
		v, err := DecodePackedDatetime(intOf(fp.ptype, u))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendInt64(v)
	case opDatetimeStr:
		v, err := ParseDatetime(string(b))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendInt64(v)
	case opTimePacked:
		v, err := DecodePackedTime(intOf(fp.ptype, u))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendInt64(v)
	case opTimeStr:
		v, err := ParseTime(string(b))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendInt64(v)
	case opNumInt:
		if isUnsigned(fp.ptype) {
			c.AppendDecimal128(NumericFromUint(u))
		} else {
			c.AppendDecimal128(NumericFromInt(intOf(fp.ptype, u)))
		}
	case opBigNumInt:
		if isUnsigned(fp.ptype) {
			c.AppendDecimal256(BigNumericFromUint(u))
		} else {
			c.AppendDecimal256(BigNumericFromInt(intOf(fp.ptype, u)))
		}
	case opNumFloat:
		v, err := NumericFromFloat(floatOf(fp.ptype, u))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendDecimal128(v)
	case opBigNumFloat:
		v, err := BigNumericFromFloat(floatOf(fp.ptype, u))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendDecimal256(v)
	case opNumStr:
		v, err := ParseNumeric(string(b))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendDecimal128(v)
	case opBigNumStr:
		v, err := ParseBigNumeric(string(b))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendDecimal256(v)
	case opNumBytes:
		v, err := NumericFromBytes(b)
		if err != nil {
			return badValue(fp, "invalid NUMERIC encoding: %v", err)
		}
		c.AppendDecimal128(v)
	case opBigNumBytes:
		v, err := BigNumericFromBytes(b)
		if err != nil {
			return badValue(fp, "invalid BIGNUMERIC encoding: %v", err)
		}
		c.AppendDecimal256(v)
	case opGeo:
		wkt, err := ParseGeography(string(b))
		if err != nil {
			return badValue(fp, "invalid GEOGRAPHY value %s: %v", quote(b), err)
		}
		c.AppendString(wkt)
	case opJSON:
		// Stored in BigQuery's canonical form (jsoncanon), which every
		// output then returns.
		canon, err := jsoncanon.Canonical(b)
		if err != nil {
			return badValue(fp, "invalid JSON value %s", quote(b))
		}
		c.AppendBytes(canon)
	case opIntervalStr:
		v, err := ParseInterval(string(b))
		if err != nil {
			return badValue(fp, "%v", err)
		}
		c.AppendInterval(v)
	case opIntervalDur:
		sec, nanos, err := secondsNanos(b)
		if err != nil || nanos < -999999999 || nanos > 999999999 || sec > maxDurationSeconds || sec < -maxDurationSeconds {
			return badValue(fp, "invalid google.protobuf.Duration")
		}
		c.AppendInterval(arrow.MonthDayNanoInterval{Nanoseconds: sec*1e9 + int64(nanos)})
	case opRecord:
		if err := s.message(fp.sub, b, c.child); err != nil {
			return err
		}
		if fp.isRange {
			if err := CheckRangeTail(c); err != nil {
				return badValue(fp, "%v", err)
			}
		}
		c.AppendValid()
	case opWrapper:
		in := fp.inner
		var iu uint64
		var ib []byte
		iwt := in.wt
		for len(b) > 0 {
			num, wt, n := protowire.ConsumeTag(b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
			m := protowire.ConsumeFieldValue(num, wt, b)
			if m < 0 {
				return errMalformed
			}
			if num == 1 {
				if wt != in.wt {
					return badValue(fp, "wrapper value has wire type %d, want %d", wt, in.wt)
				}
				switch wt {
				case protowire.VarintType:
					iu, _ = protowire.ConsumeVarint(b)
				case protowire.Fixed64Type:
					iu, _ = protowire.ConsumeFixed64(b)
				case protowire.Fixed32Type:
					x, _ := protowire.ConsumeFixed32(b)
					iu = uint64(x)
				case protowire.BytesType:
					ib, _ = protowire.ConsumeBytes(b)
				}
			}
			b = b[m:]
		}
		return s.value(in, iwt, iu, ib, c)
	default:
		return badValue(fp, "internal: no conversion")
	}
	return nil
}

// secondsNanos reads a google.protobuf.Timestamp or Duration.
func secondsNanos(b []byte) (sec int64, nanos int32, err error) {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, errMalformed
		}
		b = b[n:]
		if wt == protowire.VarintType && (num == 1 || num == 2) {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, 0, errMalformed
			}
			if num == 1 {
				sec = int64(v)
			} else {
				nanos = int32(v)
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, wt, b)
		if m < 0 {
			return 0, 0, errMalformed
		}
		b = b[m:]
	}
	return sec, nanos, nil
}

// constrained decodes a decimal for a parameterized NUMERIC/BIGNUMERIC
// column: decoded into scratch, then rounded and checked.
func (s *decodeState) constrained(fp *fieldPlan, wt protowire.Type, u uint64, b []byte, c *Column) error {
	plain := *fp
	plain.prec, plain.scale = 0, 0
	tmp := NewColumn(c.typ, 1, 0)
	if err := s.value(&plain, wt, u, b, tmp); err != nil {
		return err
	}
	if c.typ.ID() == arrow.DECIMAL128 {
		v, err := ConstrainNumeric(decimal128.New(int64(binary.LittleEndian.Uint64(tmp.data[8:])), binary.LittleEndian.Uint64(tmp.data)), fp.prec, fp.scale)
		if err != nil {
			return badValue(fp, "NUMERIC %v", err)
		}
		c.AppendDecimal128(v)
		return nil
	}
	var w [4]uint64
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(tmp.data[8*i:])
	}
	v, err := ConstrainBigNumeric(decimal256.New(w[3], w[2], w[1], w[0]), fp.prec, fp.scale)
	if err != nil {
		return badValue(fp, "BIGNUMERIC %v", err)
	}
	c.AppendDecimal256(v)
	return nil
}
