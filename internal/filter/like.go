package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// likeMatcher is a compiled LIKE pattern. Patterns made of literal text
// and % only compile to exact, prefix, suffix or contains tests (memchr
// speed); the others are matched segment by segment, without
// backtracking (see matchGeneral).
type likeMatcher struct {
	kind  likeKind
	lit   string     // exact, prefix, suffix, contains
	items []likeItem // general
	bytes bool       // _ matches one byte (BYTES) instead of one character

	// general: the pattern as segments between % signs. first is
	// anchored at the start (empty when the pattern starts with %), last
	// at the end (nil when the pattern has no %, empty when it ends with
	// %), mids are searched in order in between.
	first, last *likeSeg
	mids        []*likeSeg
	noPercent   bool

	// work, when set (tests), counts the units the general matcher
	// examines, one per Shift-And word per text unit.
	work *int
}

type likeKind uint8

const (
	likeExact likeKind = iota
	likePrefix
	likeSuffix
	likeContains
	likeAll // "%": every non-NULL value
	likeGeneral
)

type likeItem struct {
	kind byte // 'l' literal, '_' one character, '%' any run
	s    string
}

// likeSeg is a run of literals and _ between two % signs, as units: one
// byte (BYTES) or one character (STRING) each.
type likeSeg struct {
	lit   string     // the literal when the segment has no _ (units is nil)
	units []likeUnit // otherwise
	// head is the literal the segment starts with ("" when it starts
	// with _, or with a byte that can continue a UTF-8 character): find
	// skips to its next occurrence whenever no partial match is alive.
	head string
	// chunks are the Shift-And tables of units, 64 units per chunk.
	chunks []likeChunk
}

// likeUnit is one unit of a segment: any unit (_) or a key (unitKey).
type likeUnit struct {
	any bool
	key int32
}

type likeChunk struct {
	n     int              // units in this chunk (1..64)
	any   uint64           // bit i: unit i is _
	ascii *[128]uint64     // bit i of ascii[k]: unit i is key k (single-chunk segments)
	other map[int32]uint64 // the other keys
}

func (c *likeChunk) mask(k int32) uint64 {
	if c.ascii != nil && k >= 0 && k < 128 {
		return c.any | c.ascii[k]
	}
	return c.any | c.other[k]
}

// compileLike compiles a LIKE pattern: % is any run, _ one character (one
// byte for BYTES), and a backslash escapes the next character.
func compileLike(pat string, bytes bool) (*likeMatcher, error) {
	var items []likeItem
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			items = append(items, likeItem{kind: 'l', s: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '\\':
			if i+1 >= len(pat) {
				return nil, fmt.Errorf("LIKE pattern ends with a backslash")
			}
			i++
			lit.WriteByte(pat[i])
		case '%':
			flush()
			if len(items) == 0 || items[len(items)-1].kind != '%' {
				items = append(items, likeItem{kind: '%'})
			}
		case '_':
			flush()
			items = append(items, likeItem{kind: '_'})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	m := &likeMatcher{kind: likeGeneral, items: items, bytes: bytes}
	shape := make([]byte, len(items))
	for i, it := range items {
		shape[i] = it.kind
	}
	switch string(shape) {
	case "":
		m.kind, m.lit = likeExact, ""
	case "l":
		m.kind, m.lit = likeExact, items[0].s
	case "%":
		m.kind = likeAll
	case "l%":
		m.kind, m.lit = likePrefix, items[0].s
	case "%l":
		m.kind, m.lit = likeSuffix, items[1].s
	case "%l%":
		m.kind, m.lit = likeContains, items[1].s
	default:
		m.compileSegments()
	}
	return m, nil
}

// compileSegments splits items at % into the general matcher's segments.
func (m *likeMatcher) compileSegments() {
	var segs [][]likeItem
	cur := []likeItem{}
	for _, it := range m.items {
		if it.kind == '%' {
			segs = append(segs, cur)
			cur = []likeItem{}
			continue
		}
		cur = append(cur, it)
	}
	segs = append(segs, cur)
	m.first = m.newSeg(segs[0])
	if len(segs) == 1 {
		m.noPercent = true
		return
	}
	m.last = m.newSeg(segs[len(segs)-1])
	for _, s := range segs[1 : len(segs)-1] {
		m.mids = append(m.mids, m.newSeg(s))
	}
}

func (m *likeMatcher) newSeg(items []likeItem) *likeSeg {
	seg := &likeSeg{}
	wild := false
	for _, it := range items {
		if it.kind == '_' {
			wild = true
		}
	}
	if !wild {
		for _, it := range items {
			seg.lit += it.s
		}
		return seg
	}
	if it := items[0]; it.kind == 'l' && (m.bytes || !isContinuation(it.s[0])) {
		seg.head = it.s
	}
	for _, it := range items {
		if it.kind == '_' {
			seg.units = append(seg.units, likeUnit{any: true})
			continue
		}
		for i := 0; i < len(it.s); {
			k, w := m.unitKey(it.s, i)
			seg.units = append(seg.units, likeUnit{key: k})
			i += w
		}
	}
	for lo := 0; lo < len(seg.units); lo += 64 {
		us := seg.units[lo:min(lo+64, len(seg.units))]
		c := likeChunk{n: len(us), other: map[int32]uint64{}}
		if len(seg.units) <= 64 {
			c.ascii = new([128]uint64)
		}
		for i, u := range us {
			switch {
			case u.any:
				c.any |= 1 << i
			case c.ascii != nil && u.key >= 0 && u.key < 128:
				c.ascii[u.key] |= 1 << i
			default:
				c.other[u.key] |= 1 << i
			}
		}
		seg.chunks = append(seg.chunks, c)
	}
	return seg
}

// isContinuation reports whether b can only continue a UTF-8 sequence.
func isContinuation(b byte) bool { return b&0xC0 == 0x80 }

// unitKey returns the unit of s at i and its width in bytes: the byte for
// BYTES; for STRING the character, or -1-b for a byte b that is not valid
// UTF-8 (one unit, as _ counts it).
func (m *likeMatcher) unitKey(s string, i int) (int32, int) {
	c := s[i]
	if m.bytes || c < utf8.RuneSelf {
		return int32(c), 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n == 1 {
		return -1 - int32(c), 1
	}
	return r, n
}

// lastUnitKey is unitKey for the unit that ends at j.
func (m *likeMatcher) lastUnitKey(s string, j int) (int32, int) {
	c := s[j-1]
	if m.bytes || c < utf8.RuneSelf {
		return int32(c), 1
	}
	r, n := utf8.DecodeLastRuneInString(s[:j])
	if r == utf8.RuneError && n == 1 {
		return -1 - int32(c), 1
	}
	return r, n
}

func (m *likeMatcher) match(s string) bool {
	switch m.kind {
	case likeExact:
		return s == m.lit
	case likePrefix:
		return strings.HasPrefix(s, m.lit)
	case likeSuffix:
		return strings.HasSuffix(s, m.lit)
	case likeContains:
		return containsLit(s, m.lit)
	case likeAll:
		return true
	}
	return m.matchGeneral(s)
}

// matchAll matches every value of ss into out.
func (m *likeMatcher) matchAll(ss []string, out []bool) {
	switch m.kind {
	case likeContains:
		lit := m.lit
		for i, s := range ss {
			out[i] = containsLit(s, lit)
		}
	case likePrefix:
		lit := m.lit
		for i, s := range ss {
			out[i] = len(s) >= len(lit) && s[:len(lit)] == lit
		}
	default:
		for i, s := range ss {
			out[i] = m.match(s)
		}
	}
}

// matchGeneral matches P = first % mid1 % ... % midk % last without
// backtracking: first must match at the start and last at the end; the
// mids are then found in order, each at its leftmost occurrence after the
// previous one. Taking the leftmost (earliest ending: a segment has a
// fixed number of units) occurrence never loses a match, since it leaves
// the most text to the segments after it, so each segment is searched
// once over a part of the text disjoint from the others' parts.
//
// Cost: a literal segment is found with strings.Index (linear: it falls
// back to Rabin-Karp when candidates keep failing); a segment with _ runs
// a Shift-And automaton, one 64-bit word per 64 units of the segment per
// text unit: linear for segments up to 64 units, n*ceil(k/64) beyond.
// Either way there is no backtracking over the text.
func (m *likeMatcher) matchGeneral(s string) bool {
	i, ok := m.matchAt(m.first, s, 0)
	if !ok {
		return false
	}
	if m.noPercent {
		return i == len(s)
	}
	j, ok := m.matchBefore(m.last, s, len(s))
	if !ok || j < i {
		return false
	}
	for _, seg := range m.mids {
		if i, ok = m.find(seg, s[:j], i); !ok {
			return false
		}
	}
	return true
}

func (m *likeMatcher) count(n int) {
	if m.work != nil {
		*m.work += n
	}
}

// matchAt matches seg at s[i:] and returns where the match ends.
func (m *likeMatcher) matchAt(seg *likeSeg, s string, i int) (int, bool) {
	if seg.units == nil {
		if strings.HasPrefix(s[i:], seg.lit) {
			return i + len(seg.lit), true
		}
		return 0, false
	}
	for _, u := range seg.units {
		if i >= len(s) {
			return 0, false
		}
		m.count(1)
		k, w := m.unitKey(s, i)
		if !u.any && u.key != k {
			return 0, false
		}
		i += w
	}
	return i, true
}

// matchBefore matches seg ending at s[:j] and returns where the match
// starts.
func (m *likeMatcher) matchBefore(seg *likeSeg, s string, j int) (int, bool) {
	if seg.units == nil {
		if strings.HasSuffix(s[:j], seg.lit) {
			return j - len(seg.lit), true
		}
		return 0, false
	}
	for x := len(seg.units) - 1; x >= 0; x-- {
		if j <= 0 {
			return 0, false
		}
		m.count(1)
		k, w := m.lastUnitKey(s, j)
		if u := seg.units[x]; !u.any && u.key != k {
			return 0, false
		}
		j -= w
	}
	return j, true
}

// find returns the end of seg's leftmost occurrence in s[from:].
func (m *likeMatcher) find(seg *likeSeg, s string, from int) (int, bool) {
	if seg.units == nil {
		m.count(len(s) - from)
		k := strings.Index(s[from:], seg.lit)
		if k < 0 {
			return 0, false
		}
		return from + k + len(seg.lit), true
	}
	// Shift-And: bit u of state word c is set when units
	// [0, 64c+u] of seg match the text ending here.
	chunks := seg.chunks
	var one [1]uint64
	d := one[:]
	if len(chunks) > 1 {
		d = make([]uint64, len(chunks))
	}
	lastBit := uint64(1) << (chunks[len(chunks)-1].n - 1)
	idle := true // no partial match alive: d is all zero
	for i := from; i < len(s); {
		if idle && seg.head != "" {
			// A match can only start where head occurs. Index scans
			// text the automaton then never sees, so the total stays
			// linear.
			k := strings.Index(s[i:], seg.head)
			if k < 0 {
				m.count(len(s) - i)
				return 0, false
			}
			m.count(k)
			i += k
		}
		k, w := m.unitKey(s, i)
		i += w
		m.count(len(chunks))
		carry := uint64(1) // a match can start at every unit
		for c := range chunks {
			ch := &chunks[c]
			next := d[c] >> (ch.n - 1) & 1
			d[c] = (d[c]<<1 | carry) & ch.mask(k)
			carry = next
		}
		if d[len(d)-1]&lastBit != 0 {
			return i, true
		}
		idle = true
		for _, x := range d {
			if x != 0 {
				idle = false
				break
			}
		}
	}
	return 0, false
}

// likePrefix returns the literal prefix every match starts with (for
// pruning) and whether the pattern is exactly that prefix followed by %.
func (m *likeMatcher) prefix() string {
	switch m.kind {
	case likeExact, likePrefix:
		return m.lit
	case likeGeneral:
		if len(m.items) > 0 && m.items[0].kind == 'l' {
			return m.items[0].s
		}
	}
	return ""
}

// matchCol matches every value of an Arrow offsets/data column into out.
func (m *likeMatcher) matchCol(off []int32, data []byte, out []bool) {
	switch m.kind {
	case likeContains:
		lit := m.lit
		for i := range out {
			out[i] = containsLit(bytesToString(data[off[i]:off[i+1]]), lit)
		}
	case likePrefix:
		lit := m.lit
		for i := range out {
			a, b := off[i], off[i+1]
			out[i] = int(b-a) >= len(lit) && string(data[a:a+int32(len(lit))]) == lit
		}
	default:
		for i := range out {
			out[i] = m.match(bytesToString(data[off[i]:off[i+1]]))
		}
	}
}
