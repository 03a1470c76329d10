package rest

import (
	"encoding/base64"
	"testing"
	"time"
)

// FuzzDataToken: decoding never panics, and what decodes re-encodes to a
// token that decodes to the same snapshot time and row.
func FuzzDataToken(f *testing.F) {
	f.Add(encodeDataToken(time.UnixMicro(1_700_000_000_123_456), 42))
	f.Add("djE6MTox")
	f.Add("garbage!")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		if len(tok) > 4096 {
			return
		}
		at, next, err := decodeDataToken(tok)
		if err != nil {
			return
		}
		if next < 0 || at.UnixMicro() <= 0 {
			t.Fatalf("%q decoded to (%v, %d)", tok, at, next)
		}
		at2, next2, err := decodeDataToken(encodeDataToken(at, next))
		if err != nil || !at2.Equal(at) || next2 != next {
			t.Fatalf("%q: round trip gives (%v, %d, %v), want (%v, %d)", tok, at2, next2, err, at, next)
		}
	})
}

func TestDataTokenRejects(t *testing.T) {
	for _, tok := range []string{"", "!!", encodeB64("v2:1:2"), encodeB64("v1:0:2"), encodeB64("v1:1:-2"), encodeB64("v1:1"), encodeB64("v1:x:1")} {
		if _, _, err := decodeDataToken(tok); err == nil {
			t.Errorf("token %q accepted", tok)
		}
	}
}

func encodeB64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
