//go:build linux || darwin || freebsd || netbsd || openbsd

package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether r is an interactive terminal: a file whose
// terminal attributes can be read (a character device such as /dev/null
// is not one).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), termiosGet)
	return err == nil
}
