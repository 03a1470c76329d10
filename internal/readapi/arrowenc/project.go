package arrowenc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bqstore/bqstore/internal/rowjson"
)

// Projection selects a subset of a schema's columns and nested fields, as
// TableReadOptions.selected_fields does: "a" selects the column a, "a.b"
// selects only field b of the RECORD column a (also through REPEATED
// records), and the output keeps table order whatever the order of the
// selection. Names match case-insensitively, as BigQuery column names do.
//
// Projecting a record shares every buffer with the input (zero-copy): a
// projected RECORD is a struct array over the same validity bitmap with a
// subset of its children. The exception is INTERVAL (stored as
// month_day_nano_interval): it goes out as utf8 in BigQuery's canonical
// text (Y-M D H:M:S[.F]), the form the Go client's Arrow reader parses
// (it has no case for Arrow's interval types; Avro sends the same
// string). A Projection is immutable and safe for concurrent use.
type Projection struct {
	in, out *arrow.Schema
	cols    []colPlan // in output order
}

type colPlan struct {
	src  int
	plan *fieldPlan // nil: the whole column
}

// fieldPlan describes how to project one field's data: for a struct, which
// children to keep (each with its own plan); for a list, the plan of its
// element. typ is the projected type.
type fieldPlan struct {
	typ      arrow.DataType
	elem     *fieldPlan // list: the element's plan
	children []colPlan  // struct: kept children, in order
	interval bool       // month_day_nano_interval in, its canonical text (utf8) out
}

// selNode is a node of the selection tree: whole means the field is selected
// entirely; otherwise only the named children are.
type selNode struct {
	whole    bool
	children map[string]*selNode // keyed by lower-case name
	names    map[string]string   // lower-case name -> the path as the caller spelled it
}

func newSelNode() *selNode {
	return &selNode{children: map[string]*selNode{}, names: map[string]string{}}
}

// NewProjection returns the projection of s to the selected field paths. An
// empty selection selects every column. A path naming no field of s, or
// descending into a field that is not a RECORD, is an error naming the path.
func NewProjection(s *arrow.Schema, selected []string) (*Projection, error) {
	if s == nil {
		return nil, errors.New("arrowenc: nil schema")
	}
	p := &Projection{in: s}
	if len(selected) == 0 {
		p.out = s
		p.cols = make([]colPlan, s.NumFields())
		for i := range p.cols {
			p.cols[i] = colPlan{src: i}
		}
		p.textIntervals()
		return p, nil
	}
	root := newSelNode()
	for _, path := range selected {
		if strings.TrimSpace(path) == "" {
			return nil, errors.New("arrowenc: empty selected field")
		}
		n := root
		for _, part := range strings.Split(path, ".") {
			key := strings.ToLower(part)
			c, ok := n.children[key]
			if !ok {
				c = newSelNode()
				n.children[key] = c
				n.names[key] = path
			}
			n = c
		}
		n.whole = true
	}
	fields := s.Fields()
	cols, outFields, err := planFields(fields, root, "")
	if err != nil {
		return nil, err
	}
	p.cols = cols
	md := s.Metadata()
	p.out = arrow.NewSchema(outFields, &md)
	p.textIntervals()
	return p, nil
}

// textIntervals plans the INTERVAL columns and fields of the output as
// utf8 (see Projection).
func (p *Projection) textIntervals() {
	fields := p.out.Fields()
	changed := false
	for i, c := range p.cols {
		plan, typ, ok := intervalPlan(fields[i].Type, c.plan)
		if !ok {
			continue
		}
		p.cols[i].plan = plan
		fields[i].Type = typ
		changed = true
	}
	if changed {
		md := p.out.Metadata()
		p.out = arrow.NewSchema(fields, &md)
	}
}

// intervalPlan returns the plan of a field of output type t (plan: its
// projection so far, nil for the whole field) that also turns its
// intervals into text; ok is false when t holds no interval.
func intervalPlan(t arrow.DataType, plan *fieldPlan) (*fieldPlan, arrow.DataType, bool) {
	switch t := t.(type) {
	case *arrow.MonthDayNanoIntervalType:
		return &fieldPlan{typ: arrow.BinaryTypes.String, interval: true}, arrow.BinaryTypes.String, true
	case *arrow.StructType:
		fs := t.Fields()
		var children []colPlan
		if plan != nil {
			children = append([]colPlan(nil), plan.children...)
		} else {
			children = make([]colPlan, len(fs))
			for i := range children {
				children[i] = colPlan{src: i}
			}
		}
		changed := false
		for i := range fs {
			cp, ct, ok := intervalPlan(fs[i].Type, children[i].plan)
			if ok {
				children[i].plan, fs[i].Type, changed = cp, ct, true
			}
		}
		if !changed {
			return nil, nil, false
		}
		typ := arrow.StructOf(fs...)
		return &fieldPlan{typ: typ, children: children}, typ, true
	case *arrow.ListType:
		var elem *fieldPlan
		if plan != nil {
			elem = plan.elem
		}
		ef := t.ElemField()
		ep, et, ok := intervalPlan(ef.Type, elem)
		if !ok {
			return nil, nil, false
		}
		ef.Type = et
		typ := arrow.ListOfField(ef)
		return &fieldPlan{typ: typ, elem: ep}, typ, true
	}
	return nil, nil, false
}

// planFields plans the children of one level against its selection node and
// reports any selected name that matched nothing.
func planFields(fields []arrow.Field, sel *selNode, prefix string) ([]colPlan, []arrow.Field, error) {
	matched := make(map[string]bool, len(sel.children))
	var cols []colPlan
	var out []arrow.Field
	for i, f := range fields {
		key := strings.ToLower(f.Name)
		c, ok := sel.children[key]
		if !ok {
			continue
		}
		matched[key] = true
		if c.whole {
			cols = append(cols, colPlan{src: i})
			out = append(out, f)
			continue
		}
		plan, typ, err := planType(f.Type, c, prefix+f.Name)
		if err != nil {
			return nil, nil, err
		}
		nf := f
		nf.Type = typ
		cols = append(cols, colPlan{src: i, plan: plan})
		out = append(out, nf)
	}
	for key := range sel.children {
		if !matched[key] {
			return nil, nil, fmt.Errorf("arrowenc: selected field %q not found in the table schema", sel.names[key])
		}
	}
	return cols, out, nil
}

func planType(t arrow.DataType, sel *selNode, path string) (*fieldPlan, arrow.DataType, error) {
	switch t := t.(type) {
	case *arrow.StructType:
		cols, fields, err := planFields(t.Fields(), sel, path+".")
		if err != nil {
			return nil, nil, err
		}
		typ := arrow.StructOf(fields...)
		return &fieldPlan{typ: typ, children: cols}, typ, nil
	case *arrow.ListType:
		ef := t.ElemField()
		elemPlan, elemType, err := planType(ef.Type, sel, path)
		if err != nil {
			return nil, nil, err
		}
		ef.Type = elemType
		typ := arrow.ListOfField(ef)
		return &fieldPlan{typ: typ, elem: elemPlan}, typ, nil
	}
	for key := range sel.children {
		return nil, nil, fmt.Errorf("arrowenc: selected field %q: %s is not a RECORD", sel.names[key], path)
	}
	return nil, t, nil
}

// Schema returns the projected schema.
func (p *Projection) Schema() *arrow.Schema { return p.out }

// Identity reports whether the projection keeps every column whole.
func (p *Projection) Identity() bool {
	if len(p.cols) != p.in.NumFields() {
		return false
	}
	for i, c := range p.cols {
		if c.src != i || c.plan != nil {
			return false
		}
	}
	return true
}

// Record returns rec projected. rec must have the schema the projection was
// made for (or at least its column types: see SameLayout). The result shares rec's buffers; the caller releases it.
func (p *Projection) Record(rec arrow.Record) (arrow.Record, error) {
	if !rec.Schema().Equal(p.in) && !SameLayout(rec.Schema(), p.in) {
		return nil, fmt.Errorf("arrowenc: record schema %s does not match the projection's input schema %s", rec.Schema(), p.in)
	}
	if p.Identity() {
		rec.Retain()
		return rec, nil
	}
	cols := make([]arrow.Array, len(p.cols))
	for i, c := range p.cols {
		d := projectData(rec.Column(c.src).Data(), c.plan)
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecord(p.out, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// projectData returns a new reference to d projected by plan.
func projectData(d arrow.ArrayData, plan *fieldPlan) arrow.ArrayData {
	if plan == nil {
		d.Retain()
		return d
	}
	if plan.interval {
		return intervalText(d)
	}
	var children []arrow.ArrayData
	bufs := d.Buffers()
	if isList(plan.typ) {
		children = []arrow.ArrayData{projectData(d.Children()[0], plan.elem)}
	} else {
		src := d.Children()
		children = make([]arrow.ArrayData, len(plan.children))
		for i, c := range plan.children {
			children[i] = projectData(src[c.src], c.plan)
		}
		bufs = bufs[:1] // a struct has only its validity bitmap
	}
	out := array.NewData(plan.typ, d.Len(), bufs, children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}

// intervalText returns the canonical text of a month_day_nano_interval
// array's values, as a utf8 array.
func intervalText(d arrow.ArrayData) arrow.ArrayData {
	a := array.NewMonthDayNanoIntervalData(d)
	defer a.Release()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(a.Len())
	var buf []byte
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		buf = rowjson.AppendInterval(buf[:0], a.Value(i))
		b.BinaryBuilder.Append(buf)
	}
	s := b.NewStringArray()
	defer s.Release()
	out := s.Data()
	out.Retain()
	return out
}

func isList(t arrow.DataType) bool {
	_, ok := t.(*arrow.ListType)
	return ok
}
