package sql

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// DefaultMaxMemory is the default Options.MaxMemory: the memory one query
// may hold in the rows its operators keep (256 MiB).
const DefaultMaxMemory = 256 << 20

// ResourcesError is a query that needed more memory than its budget
// (Options.MaxMemory): BigQuery's resourcesExceeded.
type ResourcesError struct {
	Limit, Used int64
	// What is the operator that passed the budget.
	What string
}

func (e *ResourcesError) Error() string {
	pct := int64(100)
	if e.Limit > 0 {
		pct = e.Used * 100 / e.Limit
	}
	return fmt.Sprintf("Resources exceeded during query execution: The query could not be executed in the allotted memory. Peak usage: %d%% of limit. Top memory consumer(s): %s: 100%%", pct, e.What)
}

// distinctEntryBytes is one entry of a DISTINCT aggregate's set besides
// its key's bytes: the string header, the value and the map's overhead.
const distinctEntryBytes = 48

// rowOverhead is a row's slice header plus its backing array's header
// and allocation slack, per row held.
const rowOverhead = 48

// cellBytes estimates the memory of one cell as filter.Scalar.Values
// returns it: the interface plus what it points to.
func cellBytes(v any) int64 {
	switch x := v.(type) {
	case string:
		return 16 + 16 + int64(len(x))
	case []byte:
		return 16 + 24 + int64(len(x))
	case []any:
		n := int64(16 + 24)
		for _, e := range x {
			n += cellBytes(e)
		}
		return n
	case nil:
		return 16
	default:
		return 16 + 16
	}
}

// rowBytes estimates the memory of one row held by an operator.
func rowBytes(row []any) int64 {
	n := int64(rowOverhead)
	for _, v := range row {
		n += cellBytes(v)
	}
	return n
}

// charge accounts n more bytes held by the query's operators (what:
// the operator, for the error) and fails the query beyond its budget.
// Memory is charged when an operator keeps rows (result rows, groups,
// a join's build side, window partitions). A streaming scan releases
// what it charged (a batch, once the sink has it, sink.go), and a window
// what it held while computing (its partitions' indices and sort keys,
// the input's parts once concatenated, window.go); what the other
// operators keep is never released: the budget bounds the sum of what
// they ever held, an upper bound of their peak.
func (r *runner) charge(n int64, what string) error {
	r.mem += n
	r.peak = max(r.peak, r.mem)
	if r.opts.MaxMemory > 0 && r.mem > r.opts.MaxMemory {
		return &ResourcesError{Limit: r.opts.MaxMemory, Used: r.mem, What: what}
	}
	return nil
}

// release returns n bytes charged before: memory no longer held.
func (r *runner) release(n int64) { r.mem -= n }

// chargeRow charges one kept row.
func (r *runner) chargeRow(row []any, what string) error {
	return r.charge(rowBytes(row), what)
}

// chargeArrays charges the buffers of kept columns.
func (r *runner) chargeArrays(cols []arrow.Array, what string) error {
	return r.charge(arrowBytes(cols), what)
}

// arrowBytes is what chargeArrays charges for cols.
func arrowBytes(cols []arrow.Array) int64 {
	var n int64
	for _, a := range cols {
		for _, b := range a.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		n += int64(unsafe.Sizeof(a))
	}
	return n
}
