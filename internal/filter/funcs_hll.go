// HLL_COUNT.EXTRACT, the scalar member of the HLL_COUNT family (the
// aggregates are internal/sql's): the estimate of a sketch of
// HLL_COUNT.INIT or HLL_COUNT.MERGE_PARTIAL, 0 for NULL. Sketches are
// bqstore's own format (internal/hll), not BigQuery's bytes.

package filter

import (
	"fmt"

	"github.com/bqstore/bqstore/internal/hll"
)

func registerHLL() {
	builtins["HLL_COUNT.EXTRACT"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 1); err != nil {
			return nil, err
		}
		return c.sigStrict(e, args, []typ{tBytes}, tInt, false, func(a []value) (value, error) {
			if a[0].null {
				return value{i: 0}, nil
			}
			h, _, err := hll.Decode([]byte(a[0].s))
			if err != nil {
				return value{}, fmt.Errorf("HLL_COUNT.EXTRACT: the argument is not a sketch of HLL_COUNT.INIT")
			}
			return value{i: h.Estimate()}, nil
		})
	}
}
