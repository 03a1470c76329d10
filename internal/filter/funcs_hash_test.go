package filter

import (
	"strings"
	"testing"
)

// TestFingerprint64 checks FARM_FINGERPRINT's kernel against BigQuery's
// documented examples (the first five) and, for every length class of the
// algorithm (0-16, 17-32, 33-64 and the 64-byte loop), against values of
// FarmHash's reference Fingerprint64.
func TestFingerprint64(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1footrue", -1541654101129638711},
		{"2applefalse", 2794438866806483259},
		{"3true", -4880158226897771312},
		{"alphabet", -2427165924636348523},
		{"Amazon Redshift", 8085098817162212970},
		{"", -7286425919675154353},
		{"a", -5528939962900187677},
		{"abc", 2640714258260161385},
		{"hello world, 17b!", 5849012613728600558},
		{"0123456789abcdefghijklmnopqrstuvwxyz", -1174109194457130803},
		{strings.Repeat("x", 64), 6916188127298655160},
		{"The quick brown fox jumps over the lazy dog, again and again and again.", 8103716448383103622},
		{strings.Repeat("y", 200), 577833072005583796},
		{strings.Repeat("z", 129), 7040814056546431796},
	} {
		if got := int64(fingerprint64([]byte(tc.in))); got != tc.want {
			t.Errorf("fingerprint64(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
