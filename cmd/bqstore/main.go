// Command bqstore is a local, durable server for the BigQuery Storage API
// and an exactly-once ingestion pipeline. See the README.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/bqstore/bqstore/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
