// CAST(bytes AS STRING FORMAT f) and CAST(string AS BYTES FORMAT f): the
// BYTES format clause, whose formats (any case) are BASE2, BASE8, BASE16
// or HEX, BASE64, BASE64M (BASE64 in lines of 76 characters), ASCII and
// UTF-8 or UTF8, as GoogleSQL's reference implementation defines them:
// BASE2 and BASE8 write the bytes as one big-endian number in as many
// digits as its bits need (8 per byte; ceil(8n/3)), and read a number of
// digits back into that many bytes.

package filter

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"
)

// base64MLine is BASE64M's line length.
const base64MLine = 76

// bytesFormatOut renders b as STRING in format f.
func bytesFormatOut(f string, b []byte) (string, error) {
	switch strings.ToUpper(f) {
	case "BASE2":
		return digitsOf(b, 2, 8*len(b)), nil
	case "BASE8":
		return digitsOf(b, 8, (8*len(b)+2)/3), nil
	case "BASE16", "HEX":
		return hex.EncodeToString(b), nil
	case "BASE64":
		return base64.StdEncoding.EncodeToString(b), nil
	case "BASE64M":
		s := base64.StdEncoding.EncodeToString(b)
		var out strings.Builder
		for len(s) > base64MLine {
			out.WriteString(s[:base64MLine])
			out.WriteByte('\n')
			s = s[base64MLine:]
		}
		out.WriteString(s)
		return out.String(), nil
	case "ASCII":
		for _, c := range b {
			if c >= utf8.RuneSelf {
				return "", fmt.Errorf("Failed to decode invalid ASCII string")
			}
		}
		return string(b), nil
	case "UTF-8", "UTF8":
		if !utf8.Valid(b) {
			return "", fmt.Errorf("Invalid UTF-8 in CAST from BYTES to STRING with FORMAT '%s'", f)
		}
		return string(b), nil
	}
	return "", fmt.Errorf("Invalid format '%s' for CAST from BYTES to STRING", f)
}

// bytesFormatIn reads s, written in format f, as BYTES.
func bytesFormatIn(f, s string) ([]byte, error) {
	switch strings.ToUpper(f) {
	case "BASE2":
		return bytesOfDigits(s, 2, (len(s)+7)/8)
	case "BASE8":
		return bytesOfDigits(s, 8, len(s)/8*3+[]int{0, 1, 1, 1, 2, 2, 2, 3}[len(s)%8])
	case "BASE16", "HEX":
		if len(s)%2 == 1 {
			s = "0" + s // an odd number of digits reads as if led by 0
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("Failed to decode invalid hexadecimal string")
		}
		return b, nil
	case "BASE64", "BASE64M":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
		if err != nil {
			return nil, fmt.Errorf("Failed to decode invalid base64 string")
		}
		return b, nil
	case "ASCII":
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				return nil, fmt.Errorf("Failed to decode invalid ASCII string")
			}
		}
		return []byte(s), nil
	case "UTF-8", "UTF8":
		return []byte(s), nil // a STRING is valid UTF-8
	}
	return nil, fmt.Errorf("Invalid format '%s' for CAST from STRING to BYTES", f)
}

// digitsOf writes b, a big-endian number, in base in exactly n digits.
func digitsOf(b []byte, base, n int) string {
	if len(b) == 0 {
		return ""
	}
	s := new(big.Int).SetBytes(b).Text(base)
	return strings.Repeat("0", n-len(s)) + s
}

// bytesOfDigits reads the digits of s in base as a number held in n
// big-endian bytes (higher bits than n bytes hold are dropped).
func bytesOfDigits(s string, base, n int) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || int(s[i]-'0') >= base {
			return nil, fmt.Errorf("Failed to decode invalid base%d string", base)
		}
	}
	out := make([]byte, n)
	if n == 0 {
		return out, nil
	}
	x, _ := new(big.Int).SetString(s, base)
	b := x.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	copy(out[n-len(b):], b)
	return out, nil
}

// castFormatBytes checks CAST between BYTES and STRING with FORMAT.
func (c *checker) castFormatBytes(e *Cast, x node, to typ) (node, error) {
	if e.Zone != nil {
		return nil, c.errf(e.P, "AT TIME ZONE is not allowed in CAST from %s to %s", x.typ(), to)
	}
	f, err := c.check(e.Format)
	if err != nil {
		return nil, err
	}
	args := []node{x, f}
	call := &Call{Name: "CAST", P: e.P}
	c.safeCall = e.Safe
	defer func() { c.safeCall = false }()
	return c.sigStrict(call, args, []typ{x.typ(), tString}, to, true, func(a []value) (value, error) {
		if to == tString {
			s, err := bytesFormatOut(a[1].s, []byte(a[0].s))
			return value{s: s}, err
		}
		b, err := bytesFormatIn(a[1].s, a[0].s)
		return value{s: string(b)}, err
	})
}
