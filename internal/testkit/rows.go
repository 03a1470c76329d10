package testkit

import (
	"cloud.google.com/go/bigquery"

	"github.com/bqstore/bqstore/internal/testkit/bqread"
)

// NextRow is bqread.NextRow: it.Next(dst) past the Go client's nil-batch
// race (see there).
func NextRow(it *bigquery.RowIterator, dst any) error { return bqread.NextRow(it, dst) }
