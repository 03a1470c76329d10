package jobs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/schema"
	"github.com/bqstore/bqstore/internal/sql"
)

// A query job's timePartitioning, rangePartitioning and clustering
// (JobConfigurationQuery): a table the job creates, or truncates, gets
// them, checked against the result's schema as BigQuery checks them
// when the job runs; an append to an existing table (or a WRITE_EMPTY
// write to an empty one) must ask for what the table has, member by
// member (a member the job does not set is not checked), else the job
// fails as BigQuery's does ("Incompatible table partitioning
// specification").

// partSpec is the part of the three members bqstore compares and checks.
type partSpec struct {
	Type   string   `json:"type"`
	Field  string   `json:"field"`
	Fields []string `json:"fields"`
	Range  *struct {
		Start, End, Interval json.Number
	} `json:"range"`
}

func parsePart(raw json.RawMessage) (partSpec, error) {
	var p partSpec
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Invalid partitioning specification %s", raw)}
	}
	return p, nil
}

// checkPartitioning checks p against the schema sch of the table it
// would partition.
func checkPartitioning(p *catalog.Partitioning, sch *schema.Schema) error {
	if p == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf(format, args...)}
	}
	if len(p.TimePartitioning) > 0 && len(p.RangePartitioning) > 0 {
		return bad("Cannot specify both time partitioning and range partitioning")
	}
	names := schema.IndexNames(sch.Fields)
	field := func(name string) *schema.Field {
		if i := names.Lookup(name); i >= 0 {
			return sch.Fields[i]
		}
		return nil
	}
	if raw := p.TimePartitioning; len(raw) > 0 {
		tp, err := parsePart(raw)
		if err != nil {
			return err
		}
		switch strings.ToUpper(tp.Type) {
		case "", "DAY", "HOUR", "MONTH", "YEAR":
		default:
			return bad("Invalid value for timePartitioning.type: %s (DAY, HOUR, MONTH or YEAR)", tp.Type)
		}
		if tp.Field != "" {
			f := field(tp.Field)
			if f == nil {
				return bad("The field specified for time partitioning cannot be found in the schema: %s", tp.Field)
			}
			if f.EffectiveMode() == schema.Repeated || !slices.Contains([]schema.Type{schema.Timestamp, schema.Date, schema.DateTime}, f.Type) {
				return bad("The field specified for time partitioning can only be of type TIMESTAMP, DATE or DATETIME. The type found is: %s.", sql.TypeName(f.Type))
			}
		}
	}
	if raw := p.RangePartitioning; len(raw) > 0 {
		rp, err := parsePart(raw)
		if err != nil {
			return err
		}
		f := field(rp.Field)
		if f == nil {
			return bad("The field specified for range partitioning cannot be found in the schema: %s", rp.Field)
		}
		if f.EffectiveMode() == schema.Repeated || f.Type != schema.Integer {
			return bad("The field specified for range partitioning can only be of type INTEGER. The type found is: %s.", sql.TypeName(f.Type))
		}
		if rp.Range == nil {
			return bad("Required parameter is missing: rangePartitioning.range")
		}
	}
	if raw := p.Clustering; len(raw) > 0 {
		cp, err := parsePart(raw)
		if err != nil {
			return err
		}
		if len(cp.Fields) > 4 {
			return bad("Too many clustering fields: %d, only up to 4 are allowed", len(cp.Fields))
		}
		for _, c := range cp.Fields {
			f := field(c)
			if f == nil {
				return bad("The field specified for clustering cannot be found in the schema. Invalid field: %s", c)
			}
			if f.EffectiveMode() == schema.Repeated || f.Type == schema.Record || f.Type == schema.Float {
				return bad("Field %s is of type %s which is not supported for clustering", f.Name, sql.TypeName(f.Type))
			}
		}
	}
	return nil
}

// samePartitioning checks the partitioning and clustering p a job asks
// for against those of the existing table ct it appends to.
func samePartitioning(p *catalog.Partitioning, ct *catalog.Table) error {
	if p == nil {
		return nil
	}
	if len(p.TimePartitioning) > 0 || len(p.RangePartitioning) > 0 {
		want, got := describePart(ct.TimePartitioning, ct.RangePartitioning), describePart(p.TimePartitioning, p.RangePartitioning)
		if want != got {
			return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Incompatible table partitioning specification. Expects partitioning specification %s, but input partitioning specification is %s", want, got)}
		}
	}
	if len(p.Clustering) > 0 {
		want, got := describeClustering(ct.Clustering), describeClustering(p.Clustering)
		if !strings.EqualFold(want, got) {
			return &DestinationError{Reason: "invalid", Msg: fmt.Sprintf("Incompatible table clustering specification. Expects clustering fields %s, but input clustering fields are %s", want, got)}
		}
	}
	return nil
}

// describePart is a partitioning as BigQuery's errors print it:
// interval(type:day,field:ts), range(field:x,start:0,end:100,interval:10)
// or none.
func describePart(tp, rp json.RawMessage) string {
	switch {
	case len(tp) > 0:
		p, _ := parsePart(tp)
		s := "interval(type:" + strings.ToLower(cmp.Or(p.Type, "DAY"))
		if p.Field != "" {
			s += ",field:" + strings.ToLower(p.Field)
		}
		return s + ")"
	case len(rp) > 0:
		p, _ := parsePart(rp)
		if p.Range == nil {
			return "range(field:" + strings.ToLower(p.Field) + ")"
		}
		return fmt.Sprintf("range(field:%s,start:%s,end:%s,interval:%s)", strings.ToLower(p.Field), p.Range.Start, p.Range.End, p.Range.Interval)
	}
	return "none"
}

func describeClustering(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "[]"
	}
	p, _ := parsePart(raw)
	return "[" + strings.Join(p.Fields, ",") + "]"
}
