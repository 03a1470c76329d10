//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package cli

import "io"

// isTerminal is false where we cannot tell: rm then needs -f.
func isTerminal(io.Reader) bool { return false }
