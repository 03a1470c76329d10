package sql

import "testing"

// Findings of review2 (issue 16), fixed by 08a486c: each comment describes
// what the test found before that fix; the test asserts the behaviour now
// required.

// TestReview2SumIntermediateOverflow: SUM of INT64 fails with "Int64
// overflow" as soon as a running total leaves INT64, even when the sum
// of all the values fits: 9223372036854775807 + 1 + -1 is
// 9223372036854775807, but we answer "Int64 overflow: 9223372036854775807
// + 1". The outcome depends on the order rows arrive (the same values
// with -1 first succeed), so one table can succeed or fail by batch
// order. GoogleSQL's reference implementation accumulates an INT64 SUM
// in an __int128 ("__int128 out_int128_ = 0; // Sum" in its aggregate
// accumulator, zetasql/reference_impl/function.cc) and reports overflow
// only for the final value. Same grouped (aggstate.go's typed state) and
// ungrouped, and for SUM OVER a window. Suspect: the SUM INT64 state in
// aggstate.go / aggfuncs.go (checked add per row).
func TestReview2SumIntermediateOverflow(t *testing.T) {
	rows := "SELECT 1 AS g, 9223372036854775807 AS x UNION ALL SELECT 1, 1 UNION ALL SELECT 1, -1"
	for _, c := range [][2]string{
		{"SELECT SUM(x) AS s FROM (" + rows + ")", "s:INTEGER\n9223372036854775807\n"},
		{"SELECT g, SUM(x) AS s FROM (" + rows + ") GROUP BY g", "g:INTEGER s:INTEGER\n1 | 9223372036854775807\n"},
		{"SELECT SUM(x) OVER () AS s FROM (" + rows + ") LIMIT 1", "s:INTEGER\n9223372036854775807\n"},
	} {
		reviewSCheck(t, nil, c[0], c[1])
	}
}
