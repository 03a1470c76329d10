package cli

import (
	"os"
	"strings"
	"testing"
)

// TestIsTerminalNotFooledByDevices: /dev/null is a character device but
// not a terminal, so rm without -f refuses with it as stdin.
func TestIsTerminalNotFooledByDevices(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, in := range map[string]any{"devnull": null, "pipe": r, "reader": strings.NewReader("y\n")} {
		if isTerminal(in.(interface{ Read([]byte) (int, error) })) {
			t.Errorf("%s is reported as a terminal", name)
		}
	}
}
