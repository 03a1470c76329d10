package protorows

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/schema"
)

type dtype = descriptorpb.FieldDescriptorProto_Type

const (
	tDouble   = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE
	tFloat    = descriptorpb.FieldDescriptorProto_TYPE_FLOAT
	tInt64    = descriptorpb.FieldDescriptorProto_TYPE_INT64
	tUint64   = descriptorpb.FieldDescriptorProto_TYPE_UINT64
	tInt32    = descriptorpb.FieldDescriptorProto_TYPE_INT32
	tFixed64  = descriptorpb.FieldDescriptorProto_TYPE_FIXED64
	tFixed32  = descriptorpb.FieldDescriptorProto_TYPE_FIXED32
	tBool     = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	tString   = descriptorpb.FieldDescriptorProto_TYPE_STRING
	tGroup    = descriptorpb.FieldDescriptorProto_TYPE_GROUP
	tMessage  = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	tBytes    = descriptorpb.FieldDescriptorProto_TYPE_BYTES
	tUint32   = descriptorpb.FieldDescriptorProto_TYPE_UINT32
	tEnum     = descriptorpb.FieldDescriptorProto_TYPE_ENUM
	tSfixed32 = descriptorpb.FieldDescriptorProto_TYPE_SFIXED32
	tSfixed64 = descriptorpb.FieldDescriptorProto_TYPE_SFIXED64
	tSint32   = descriptorpb.FieldDescriptorProto_TYPE_SINT32
	tSint64   = descriptorpb.FieldDescriptorProto_TYPE_SINT64
)

// op is the conversion from one proto field to its column.
type op uint8

const (
	opInt64 op = iota + 1 // integer kinds -> int64
	opFloat64
	opBool
	opString
	opEnumName
	opBytes
	opDateInt
	opDateStr
	opDatetimePacked
	opDatetimeStr
	opTimePacked
	opTimeStr
	opTsInt
	opTsStr
	opTsMsg
	opNumInt
	opNumFloat
	opNumStr
	opNumBytes
	opBigNumInt
	opBigNumFloat
	opBigNumStr
	opBigNumBytes
	opGeo
	opJSON
	opIntervalStr
	opIntervalDur
	opRecord  // nested message -> struct (RECORD and RANGE)
	opWrapper // google.protobuf.*Value -> its scalar
)

// fieldPlan is one descriptor field compiled against its column.
type fieldPlan struct {
	num      protowire.Number
	path     string // dotted column path, for errors
	col      int    // column index within the record
	ptype    dtype
	wt       protowire.Type // wire type of one (unpacked) value
	repeated bool
	op       op
	isRange  bool       // opRecord of a RANGE column: start < end
	sub      *msgPlan   // opRecord
	inner    *fieldPlan // opWrapper: the wrapper's `value` field
	enum     map[int32]string
	enumNum  map[string]int32 // enum value numbers by name (defaults)
	// elemValues is the values one element of a repeated field decodes
	// to (for a RECORD, its leaf columns), counted against MaxValues.
	elemValues int
	maxLen     int // STRING/BYTES maxLength (characters / bytes)
	prec       int // parameterized NUMERIC/BIGNUMERIC precision and scale (0: none)
	scale      int
	def        *slot
}

// colPlan is one column of a record.
type colPlan struct {
	field    *schema.Field
	path     string
	required bool
	repeated bool
	top      bool
	idx      int        // index within the record's columns
	fp       *fieldPlan // nil when the descriptor has no field for the column
	def      *Default   // the column's defaultValueExpression, compiled
}

// msgPlan is a descriptor message compiled against a record's columns.
type msgPlan struct {
	cols   []colPlan
	fields []fieldPlan
	dense  []int16 // field number -> index in fields + 1, for small numbers
	sparse map[protowire.Number]int
	slots  []slot // scratch: the last value of each singular column
}

// slot holds the raw value of a singular field until the message ends (the
// last occurrence wins, as in proto).
type slot struct {
	set bool
	wt  protowire.Type
	u   uint64
	b   []byte
}

func (p *msgPlan) lookup(n protowire.Number) *fieldPlan {
	if int(n) < len(p.dense) {
		if i := p.dense[n]; i > 0 {
			return &p.fields[i-1]
		}
		return nil
	}
	if i, ok := p.sparse[n]; ok {
		return &p.fields[i]
	}
	return nil
}

// Decoder turns AppendRows proto rows into Arrow records of a table's
// schema. It is compiled once per (writer schema, table schema) pair.
//
// A Decoder keeps scratch state between calls: it is safe for use by one
// goroutine at a time. The records it returns own their memory.
type Decoder struct {
	table *schema.Schema
	arrow *arrow.Schema
	root  *msgPlan

	// Now is the clock for CURRENT_TIMESTAMP() and friends in default
	// values; time.Now when nil.
	Now func() time.Time

	// perRow[i] is the variable-length bytes per row column i needed in the
	// previous request: how the next request's bytes are shared among the
	// columns when reserving (see reserve).
	perRow []float64
	nvar   int // columns holding variable-length data

	valuesPerRow int // leaf values one row decodes to (a list counts one)
	fixedPerRow  int // fixed-width bytes one row decodes to (a list one element)
}

// Schema is the Arrow schema of the records Decode returns:
// schema.ToArrow(table).
func (d *Decoder) Schema() *arrow.Schema { return d.arrow }

// maxDepth bounds message nesting (BigQuery allows 15 levels of RECORD).
const maxDepth = 16

type compiler struct {
	types    map[string]*descriptorpb.DescriptorProto
	root     string
	rootDesc *descriptorpb.DescriptorProto

	// Indexes built on first use (see resolveEnum).
	enumScopes map[*descriptorpb.DescriptorProto]map[string]*descriptorpb.EnumDescriptorProto
	anyEnum    map[string]*descriptorpb.EnumDescriptorProto
	enumCache  map[*descriptorpb.EnumDescriptorProto]enumMaps
}

// Compile compiles an AppendRows writer_schema.proto_descriptor against the
// table schema. Columns are matched by name, case-insensitively, or by the
// column_name field option (storagepb.E_ColumnName, 454943157); nested
// message types are resolved within the self-contained descriptor (its
// nested_type, as adapt.NormalizeDescriptor flattens them), and the
// google.protobuf wrapper, Timestamp and Duration types are recognised by
// shape. Errors are *ExtraFieldError, *FieldTypeError or *DescriptorError.
func Compile(desc *descriptorpb.DescriptorProto, table *schema.Schema) (*Decoder, error) {
	if desc == nil {
		return nil, descErrorf("no descriptor")
	}
	if table == nil {
		return nil, fmt.Errorf("protorows: no table schema")
	}
	c := &compiler{types: map[string]*descriptorpb.DescriptorProto{}, root: desc.GetName(), rootDesc: desc}
	if err := c.index("", desc, 0); err != nil {
		return nil, err
	}
	if _, taken := c.types[c.root]; !taken && c.root != "" {
		c.types[c.root] = desc // the root may be referenced by its own name
	}
	root, err := c.message(desc, table.Fields, "", true, 0)
	if err != nil {
		return nil, err
	}
	d := &Decoder{
		table: table,
		arrow: schema.ToArrow(table),
		root:  root,
	}
	for _, f := range d.arrow.Fields() {
		d.valuesPerRow += LeafValues(f.Type)
		d.fixedPerRow += fixedWidth(f.Type)
		if hasVarData(f.Type) {
			d.nvar++
		}
	}
	return d, nil
}

func (c *compiler) index(prefix string, m *descriptorpb.DescriptorProto, depth int) error {
	if depth > 32 {
		return descErrorf("nested types too deep")
	}
	for _, n := range m.GetNestedType() {
		name := n.GetName()
		if prefix != "" {
			name = prefix + "." + name
		}
		if _, dup := c.types[name]; dup {
			return descErrorf("duplicate message type %q", name)
		}
		c.types[name] = n
		if err := c.index(name, n, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// resolve finds a message type by (possibly qualified) name: relative to
// the root (adapt's "google_protobuf_Int64Value"), or fully qualified with
// the root's or a package's prefix (".pkg.Root.Nested").
func (c *compiler) resolve(name string) *descriptorpb.DescriptorProto {
	n := strings.TrimPrefix(name, ".")
	for {
		if m, ok := c.types[n]; ok {
			return m
		}
		if c.root != "" && strings.HasPrefix(n, c.root+".") {
			if m, ok := c.types[n[len(c.root)+1:]]; ok {
				return m
			}
		}
		i := strings.IndexByte(n, '.')
		if i < 0 {
			break
		}
		n = n[i+1:]
	}
	return wellKnown[strings.TrimPrefix(name, ".")]
}

// resolveEnum finds an enum by type name (adapt: "Foo_E.Enum"): in the
// named parent message, else in the root, else in any message (by sorted
// name, so that the choice is deterministic). The scopes are indexed once
// per compilation: a descriptor of many enum fields compiles in linear time.
func (c *compiler) resolveEnum(name string) *descriptorpb.EnumDescriptorProto {
	n := strings.TrimPrefix(name, ".")
	i := strings.LastIndexByte(n, '.')
	parent, leaf := "", n
	if i >= 0 {
		parent, leaf = n[:i], n[i+1:]
	}
	if parent != "" {
		if m := c.resolve(parent); m != nil {
			if e := c.enumsOf(m)[leaf]; e != nil {
				return e
			}
		}
	}
	if e := c.enumsOf(c.rootDesc)[leaf]; e != nil {
		return e
	}
	if c.anyEnum == nil {
		names := make([]string, 0, len(c.types))
		for n := range c.types {
			names = append(names, n)
		}
		sort.Strings(names)
		c.anyEnum = map[string]*descriptorpb.EnumDescriptorProto{}
		for _, n := range names {
			for _, e := range c.types[n].GetEnumType() {
				if _, dup := c.anyEnum[e.GetName()]; !dup {
					c.anyEnum[e.GetName()] = e
				}
			}
		}
	}
	return c.anyEnum[leaf]
}

// enumsOf indexes the enums a message declares by name (the first of a
// name wins, as a scan would find it).
func (c *compiler) enumsOf(m *descriptorpb.DescriptorProto) map[string]*descriptorpb.EnumDescriptorProto {
	if ix, ok := c.enumScopes[m]; ok {
		return ix
	}
	ix := make(map[string]*descriptorpb.EnumDescriptorProto, len(m.GetEnumType()))
	for _, e := range m.GetEnumType() {
		if _, dup := ix[e.GetName()]; !dup {
			ix[e.GetName()] = e
		}
	}
	if c.enumScopes == nil {
		c.enumScopes = map[*descriptorpb.DescriptorProto]map[string]*descriptorpb.EnumDescriptorProto{}
	}
	c.enumScopes[m] = ix
	return ix
}

type enumMaps struct {
	names map[int32]string
	nums  map[string]int32
}

// enumValues returns an enum's value names by number and numbers by name,
// built once per enum however many fields use it. Of aliases (two names
// for one number) the first name is reported.
func (c *compiler) enumValues(e *descriptorpb.EnumDescriptorProto) (map[int32]string, map[string]int32) {
	if m, ok := c.enumCache[e]; ok {
		return m.names, m.nums
	}
	m := enumMaps{names: make(map[int32]string, len(e.GetValue())), nums: make(map[string]int32, len(e.GetValue()))}
	for _, v := range e.GetValue() {
		if _, dup := m.names[v.GetNumber()]; !dup {
			m.names[v.GetNumber()] = v.GetName()
		}
		if _, dup := m.nums[v.GetName()]; !dup {
			m.nums[v.GetName()] = v.GetNumber()
		}
	}
	if c.enumCache == nil {
		c.enumCache = map[*descriptorpb.EnumDescriptorProto]enumMaps{}
	}
	c.enumCache[e] = m
	return m.names, m.nums
}

// elemValues is the leaf values one element of a REPEATED column holds.
func elemValues(f *schema.Field) int {
	switch f.Type {
	case schema.Record:
		n := 0
		for _, ch := range f.Fields {
			if ch.EffectiveMode() == schema.Repeated {
				n++
			} else {
				n += elemValues(ch)
			}
		}
		return max(n, 1)
	case schema.Range:
		return 2
	}
	return 1
}

// columnName returns the column a descriptor field writes: the column_name
// option when set, else the field name.
func columnName(f *descriptorpb.FieldDescriptorProto) string {
	opts := f.GetOptions()
	if opts == nil {
		return f.GetName()
	}
	if proto.HasExtension(opts, storagepb.E_ColumnName) {
		if s, ok := proto.GetExtension(opts, storagepb.E_ColumnName).(string); ok && s != "" {
			return s
		}
	}
	// Unregistered: look in the unknown fields.
	b := opts.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		if num == 454943157 && wt == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m >= 0 && len(v) > 0 {
				return string(v)
			}
			break
		}
		m := protowire.ConsumeFieldValue(num, wt, b)
		if m < 0 {
			break
		}
		b = b[m:]
	}
	return f.GetName()
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func modeType(f *schema.Field) string {
	t := string(f.Type)
	if f.Type == schema.Range && f.RangeElementType != nil {
		t = "RANGE<" + string(f.RangeElementType.Type) + ">"
	}
	if f.EffectiveMode() == schema.Repeated {
		return "REPEATED " + t
	}
	return t
}

func protoTypeName(f *descriptorpb.FieldDescriptorProto) string {
	if f.GetType() == tMessage || f.GetType() == tGroup || f.GetType() == tEnum {
		return strings.ToLower(strings.TrimPrefix(f.GetType().String(), "TYPE_")) + " " + f.GetTypeName()
	}
	return f.GetType().String()
}

// message compiles one descriptor message against the columns of a record.
func (c *compiler) message(m *descriptorpb.DescriptorProto, cols []*schema.Field, prefix string, top bool, depth int) (*msgPlan, error) {
	if depth > maxDepth {
		return nil, descErrorf("message %s nested more than %d levels", m.GetName(), maxDepth)
	}
	p := &msgPlan{cols: make([]colPlan, len(cols)), slots: make([]slot, len(cols))}
	for i, f := range cols {
		cp := &p.cols[i]
		cp.field = f
		cp.path = joinPath(prefix, f.Name)
		cp.required = f.EffectiveMode() == schema.Required
		cp.repeated = f.EffectiveMode() == schema.Repeated
		cp.top = top
		cp.idx = i
		if f.DefaultValueExpression != "" {
			def, err := CompileDefault(f)
			if err != nil {
				return nil, fmt.Errorf("protorows: column %s: %w", cp.path, err)
			}
			cp.def = def
		}
	}
	names := schema.IndexNames(cols)
	seenNum := map[int32]bool{}
	writer := make([]string, len(cols)) // the descriptor field writing each column
	maxNum := int32(0)
	for _, fd := range m.GetField() {
		num := fd.GetNumber()
		if num <= 0 || num > int32(protowire.MaxValidNumber) {
			return nil, descErrorf("field %s has invalid number %d", fd.GetName(), num)
		}
		if seenNum[num] {
			return nil, descErrorf("message %s: duplicate field number %d", m.GetName(), num)
		}
		seenNum[num] = true
		if fd.GetName() == "" {
			return nil, descErrorf("message %s: field %d has no name", m.GetName(), num)
		}
		name := columnName(fd)
		ci := names.Lookup(name)
		if ci < 0 {
			return nil, &ExtraFieldError{Field: joinPath(prefix, name)}
		}
		if writer[ci] != "" {
			return nil, descErrorf("fields %s and %s both write column %s", writer[ci], fd.GetName(), p.cols[ci].path)
		}
		writer[ci] = fd.GetName()
		fp, err := c.field(fd, cols[ci], p.cols[ci].path, depth)
		if err != nil {
			return nil, err
		}
		fp.col = ci
		p.fields = append(p.fields, *fp)
		if num > maxNum {
			maxNum = num
		}
	}
	for i := range p.fields {
		p.cols[p.fields[i].col].fp = &p.fields[i]
	}
	if maxNum < 1024 {
		p.dense = make([]int16, maxNum+1)
		for i := range p.fields {
			p.dense[p.fields[i].num] = int16(i + 1)
		}
	} else {
		p.sparse = make(map[protowire.Number]int, len(p.fields))
		for i := range p.fields {
			p.sparse[p.fields[i].num] = i
		}
	}
	return p, nil
}

func wireTypeOf(t dtype) (protowire.Type, bool) {
	switch t {
	case tInt64, tUint64, tInt32, tUint32, tBool, tEnum, tSint32, tSint64:
		return protowire.VarintType, true
	case tFixed64, tSfixed64, tDouble:
		return protowire.Fixed64Type, true
	case tFixed32, tSfixed32, tFloat:
		return protowire.Fixed32Type, true
	case tString, tBytes, tMessage:
		return protowire.BytesType, true
	}
	return 0, false
}

// field compiles one descriptor field against its column.
func (c *compiler) field(fd *descriptorpb.FieldDescriptorProto, col *schema.Field, path string, depth int) (*fieldPlan, error) {
	fp := &fieldPlan{num: protowire.Number(fd.GetNumber()), path: path, ptype: fd.GetType()}
	wt, ok := wireTypeOf(fd.GetType())
	if !ok {
		if fd.GetType() == tGroup {
			return nil, &FieldTypeError{Field: path, ProtoType: protoTypeName(fd), ColumnType: modeType(col), Reason: "groups are not supported"}
		}
		return nil, descErrorf("field %s has invalid type %d", fd.GetName(), fd.GetType())
	}
	fp.wt = wt
	fp.repeated = fd.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	if fp.repeated {
		fp.elemValues = elemValues(col)
	}
	colRepeated := col.EffectiveMode() == schema.Repeated
	if fp.repeated != colRepeated {
		return nil, &FieldTypeError{Field: path, ProtoType: protoTypeName(fd), ColumnType: modeType(col),
			Reason: "repeated fields must map to REPEATED columns and only to them"}
	}
	typeErr := func(reason string) error {
		return &FieldTypeError{Field: path, ProtoType: protoTypeName(fd), ColumnType: modeType(col), Reason: reason}
	}
	if fd.GetType() == tMessage {
		msg := c.resolve(fd.GetTypeName())
		if msg == nil {
			return nil, descErrorf("field %s: unknown message type %q", fd.GetName(), fd.GetTypeName())
		}
		switch {
		case col.Type == schema.Record:
			sub, err := c.message(msg, col.Fields, path, false, depth+1)
			if err != nil {
				return nil, err
			}
			fp.op, fp.sub = opRecord, sub
		case col.Type == schema.Range:
			et := schema.Timestamp
			if col.RangeElementType != nil {
				et = col.RangeElementType.Type
			}
			rangeCols := []*schema.Field{{Name: "start", Type: et}, {Name: "end", Type: et}}
			sub, err := c.message(msg, rangeCols, path, false, depth+1)
			if err != nil {
				return nil, err
			}
			fp.op, fp.sub, fp.isRange = opRecord, sub, true
		case col.Type == schema.Timestamp && isSecondsNanos(msg):
			fp.op = opTsMsg
		case col.Type == schema.Interval && isSecondsNanos(msg):
			fp.op = opIntervalDur
		default:
			inner := wrapperValue(msg)
			if inner == nil {
				return nil, typeErr("a message can only be written to a RECORD or RANGE column, or be a google.protobuf wrapper, Timestamp or Duration")
			}
			if inner.GetType() == tMessage || inner.GetType() == tGroup || inner.GetType() == tEnum {
				return nil, typeErr("wrapper value must be a scalar")
			}
			ifd := &descriptorpb.FieldDescriptorProto{Name: inner.Name, Number: inner.Number, Type: inner.Type}
			ip, err := c.field(ifd, &schema.Field{Name: col.Name, Type: col.Type, MaxLength: col.MaxLength,
				Precision: col.Precision, Scale: col.Scale}, path, depth)
			if err != nil {
				return nil, typeErr("wrapper " + fd.GetTypeName() + " holds " + inner.GetType().String())
			}
			fp.op, fp.inner = opWrapper, ip
		}
		return fp, nil
	}
	if fd.DefaultValue != nil && fp.repeated {
		return nil, descErrorf("field %s: repeated fields cannot have default values", fd.GetName())
	}
	t := fd.GetType()
	isInt := t == tInt32 || t == tInt64 || t == tUint32 || t == tSint32 || t == tSint64 || t == tSfixed32 || t == tSfixed64 || t == tFixed32
	isUint64 := t == tUint64 || t == tFixed64
	isFloat := t == tDouble || t == tFloat
	switch col.Type {
	case schema.Integer:
		if isInt || t == tEnum {
			fp.op = opInt64
		}
	case schema.Float:
		if isFloat {
			fp.op = opFloat64
		}
	case schema.Boolean:
		if t == tBool || isInt || isUint64 {
			fp.op = opBool
		}
	case schema.String:
		switch t {
		case tString:
			fp.op = opString
		case tEnum:
			fp.op = opEnumName
		}
		fp.maxLen = int(col.MaxLength)
	case schema.Bytes:
		if t == tBytes || t == tString {
			fp.op = opBytes
		}
		fp.maxLen = int(col.MaxLength)
	case schema.Date:
		switch {
		case t == tInt32 || t == tInt64 || t == tSint32 || t == tSint64 || t == tSfixed32 || t == tSfixed64:
			fp.op = opDateInt
		case t == tString:
			fp.op = opDateStr
		}
	case schema.DateTime:
		switch {
		case t == tInt64 || t == tSint64 || t == tSfixed64:
			fp.op = opDatetimePacked
		case t == tString:
			fp.op = opDatetimeStr
		}
	case schema.Time:
		switch {
		case t == tInt64 || t == tSint64 || t == tSfixed64:
			fp.op = opTimePacked
		case t == tString:
			fp.op = opTimeStr
		}
	case schema.Timestamp:
		switch {
		case isInt:
			fp.op = opTsInt
		case t == tString:
			fp.op = opTsStr
		}
	case schema.Numeric, schema.BigNumeric:
		fp.prec, fp.scale = int(col.Precision), int(col.Scale)
		big := col.Type == schema.BigNumeric
		switch {
		case isInt || isUint64:
			fp.op = pick(big, opBigNumInt, opNumInt)
		case isFloat:
			fp.op = pick(big, opBigNumFloat, opNumFloat)
		case t == tString:
			fp.op = pick(big, opBigNumStr, opNumStr)
		case t == tBytes:
			fp.op = pick(big, opBigNumBytes, opNumBytes)
		}
	case schema.Geography:
		if t == tString {
			fp.op = opGeo
		}
	case schema.JSON:
		if t == tString {
			fp.op = opJSON
		}
	case schema.Interval:
		if t == tString {
			fp.op = opIntervalStr
		}
	}
	if fp.op == 0 {
		return nil, typeErr("")
	}
	if t == tEnum {
		e := c.resolveEnum(fd.GetTypeName())
		if e == nil {
			return nil, descErrorf("field %s: unknown enum type %q", fd.GetName(), fd.GetTypeName())
		}
		fp.enum, fp.enumNum = c.enumValues(e)
	}
	if fd.DefaultValue != nil {
		s, err := parseProtoDefault(fd, fp.enumNum)
		if err != nil {
			return nil, descErrorf("field %s: default value %q: %v", fd.GetName(), fd.GetDefaultValue(), err)
		}
		fp.def = s
	}
	return fp, nil
}

func pick(b bool, x, y op) op {
	if b {
		return x
	}
	return y
}

// isSecondsNanos reports the shape of google.protobuf.Timestamp and
// Duration: int64 seconds = 1, int32 nanos = 2.
func isSecondsNanos(m *descriptorpb.DescriptorProto) bool {
	fs := m.GetField()
	if len(fs) != 2 {
		return false
	}
	var s, n bool
	for _, f := range fs {
		switch {
		case f.GetNumber() == 1 && f.GetName() == "seconds" && f.GetType() == tInt64:
			s = true
		case f.GetNumber() == 2 && f.GetName() == "nanos" && f.GetType() == tInt32:
			n = true
		}
	}
	return s && n
}

// wrapperValue returns the `value` field of a wrapper-shaped message
// (exactly one non-repeated field named value, number 1), or nil.
func wrapperValue(m *descriptorpb.DescriptorProto) *descriptorpb.FieldDescriptorProto {
	fs := m.GetField()
	if len(fs) != 1 || fs[0].GetName() != "value" || fs[0].GetNumber() != 1 ||
		fs[0].GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED {
		return nil
	}
	return fs[0]
}

// wellKnown holds the google.protobuf types a non-normalized descriptor may
// reference without including them.
var wellKnown = func() map[string]*descriptorpb.DescriptorProto {
	wrap := func(name string, t dtype) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: []*descriptorpb.FieldDescriptorProto{{
			Name: proto.String("value"), Number: proto.Int32(1), Type: t.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}}}
	}
	secNanos := func(name string) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: []*descriptorpb.FieldDescriptorProto{
			{Name: proto.String("seconds"), Number: proto.Int32(1), Type: tInt64.Enum()},
			{Name: proto.String("nanos"), Number: proto.Int32(2), Type: tInt32.Enum()},
		}}
	}
	return map[string]*descriptorpb.DescriptorProto{
		"google.protobuf.DoubleValue": wrap("DoubleValue", tDouble),
		"google.protobuf.FloatValue":  wrap("FloatValue", tFloat),
		"google.protobuf.Int64Value":  wrap("Int64Value", tInt64),
		"google.protobuf.UInt64Value": wrap("UInt64Value", tUint64),
		"google.protobuf.Int32Value":  wrap("Int32Value", tInt32),
		"google.protobuf.UInt32Value": wrap("UInt32Value", tUint32),
		"google.protobuf.BoolValue":   wrap("BoolValue", tBool),
		"google.protobuf.StringValue": wrap("StringValue", tString),
		"google.protobuf.BytesValue":  wrap("BytesValue", tBytes),
		"google.protobuf.Timestamp":   secNanos("Timestamp"),
		"google.protobuf.Duration":    secNanos("Duration"),
	}
}()

// parseProtoDefault turns a descriptor default_value (proto text form) into
// the raw value an explicit field would carry.
func parseProtoDefault(fd *descriptorpb.FieldDescriptorProto, enum map[string]int32) (*slot, error) {
	s := fd.GetDefaultValue()
	out := &slot{set: true}
	switch fd.GetType() {
	case tBool:
		out.wt = protowire.VarintType
		switch s {
		case "true":
			out.u = 1
		case "false":
		default:
			return nil, fmt.Errorf("not a bool")
		}
	case tInt32, tInt64, tSint32, tSint64, tSfixed32, tSfixed64:
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return nil, err
		}
		switch fd.GetType() {
		case tSint32, tSint64:
			out.wt, out.u = protowire.VarintType, protowire.EncodeZigZag(v)
		case tSfixed32:
			out.wt, out.u = protowire.Fixed32Type, uint64(uint32(int32(v)))
		case tSfixed64:
			out.wt, out.u = protowire.Fixed64Type, uint64(v)
		default:
			out.wt, out.u = protowire.VarintType, uint64(v)
		}
	case tUint32, tUint64, tFixed32, tFixed64:
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return nil, err
		}
		out.wt, out.u = protowire.VarintType, v
		switch fd.GetType() {
		case tFixed32:
			out.wt = protowire.Fixed32Type
		case tFixed64:
			out.wt = protowire.Fixed64Type
		}
	case tDouble, tFloat:
		var f float64
		switch s {
		case "inf":
			f = math.Inf(1)
		case "-inf":
			f = math.Inf(-1)
		case "nan":
			f = math.NaN()
		default:
			var err error
			if f, err = strconv.ParseFloat(s, 64); err != nil {
				return nil, err
			}
		}
		if fd.GetType() == tFloat {
			out.wt, out.u = protowire.Fixed32Type, uint64(math.Float32bits(float32(f)))
		} else {
			out.wt, out.u = protowire.Fixed64Type, math.Float64bits(f)
		}
	case tString:
		out.wt, out.b = protowire.BytesType, []byte(s)
	case tBytes:
		b, err := unescapeCBytes(s)
		if err != nil {
			return nil, err
		}
		out.wt, out.b = protowire.BytesType, b
	case tEnum:
		out.wt = protowire.VarintType
		n, found := enum[s]
		out.u = uint64(int64(n))
		if !found {
			return nil, fmt.Errorf("no enum value %q", s)
		}
	default:
		return nil, fmt.Errorf("type %s cannot have a default", fd.GetType())
	}
	return out, nil
}

// unescapeCBytes reverses the C-style escaping of bytes defaults.
func unescapeCBytes(s string) ([]byte, error) {
	var out []byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '\\' {
			out = append(out, ch)
			continue
		}
		i++
		if i >= len(s) {
			return nil, fmt.Errorf("trailing backslash")
		}
		switch e := s[i]; e {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case '"', '\'', '\\', '?':
			out = append(out, e)
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'v':
			out = append(out, 11)
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("bad \\x escape")
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 8)
			out = append(out, byte(v))
			i = j - 1
		default:
			if e < '0' || e > '7' {
				return nil, fmt.Errorf("bad escape \\%c", e)
			}
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			if v > 255 {
				return nil, fmt.Errorf("bad octal escape")
			}
			out = append(out, byte(v))
			i = j - 1
		}
	}
	return out, nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
