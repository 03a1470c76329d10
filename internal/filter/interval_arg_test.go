package filter

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestIntervalArgumentNeverPanics: an INTERVAL n part argument where a
// function takes none (GENERATE_DATE_ARRAY(date, INTERVAL 1 DAY), a
// missing end date) is a positioned error, never a panic in the type
// checker. Every builtin, each argument position, arities 1 to 4.
func TestIntervalArgumentNeverPanics(t *testing.T) {
	names := make([]string, 0, len(builtins))
	for name := range builtins {
		names = append(names, name)
	}
	sort.Strings(names)
	others := []string{"DATE '2020-01-01'", "'2020-01-01'", "1", "int_field", "str"}
	sch := testSchema()
	for _, name := range names {
		for n := 1; n <= 4; n++ {
			for pos := 0; pos < n; pos++ {
				for _, o := range others {
					args := make([]string, n)
					for i := range args {
						args[i] = o
					}
					args[pos] = "INTERVAL 1 DAY"
					expr := fmt.Sprintf("%s(%s) IS NULL", name, strings.Join(args, ", "))
					for _, scalar := range []bool{false, true} {
						func() {
							defer func() {
								if r := recover(); r != nil {
									t.Errorf("%s (scalar %v): panic: %v", expr, scalar, r)
								}
							}()
							var err error
							if scalar {
								_, err = CompileScalar(expr, sch)
							} else {
								_, err = Compile(expr, sch)
							}
							if err != nil {
								if _, ok := err.(*Error); !ok {
									t.Errorf("%s: error %T is not *Error", expr, err)
								}
							}
						}()
					}
				}
			}
		}
	}
}
