package readapi_test

import (
	"os"
	"testing"

	"github.com/bqstore/bqstore/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.RunChildIfRequested()
	os.Exit(m.Run())
}
