package quota

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The real service's RESOURCE_EXHAUSTED messages, as clients and operators
// have quoted them (docs/faults.md cites the sources). Clients branch on
// the prefix only: managedwriter retries an AppendRows failure whose
// message starts with AppendRowsThroughputPrefix and no other
// RESOURCE_EXHAUSTED.
const (
	AppendRowsThroughputPrefix = "Exceeds 'AppendRows throughput' quota"
	CreateWriteStreamPrefix    = "Exceeds 'CreateWriteStream requests' quota"
	ActiveStreamsPrefix        = "Exceeds 'Concurrent write streams' quota"
)

// userID stands in for the service's quota user id (project number and
// region, such as project0000002c6ed4d198_us).
func userID(project string) string { return "bqstore_" + project }

// AppendRowsThroughputError is the status of an AppendRows request over
// the throughput quota; entity is the write stream's name.
func AppendRowsThroughputError(project, entity string) error {
	return status.Error(codes.ResourceExhausted, fmt.Sprintf(
		"%s, user_id: %s (status: INSUFFICIENT_TOKENS), you can issue a raise quota request through Google Cloud Console. "+
			"Be sure to include this full error message in the request description. Entity: %s",
		AppendRowsThroughputPrefix, userID(project), entity))
}

// CreateWriteStreamError is the status of a CreateWriteStream call over
// the stream-creation rate quota; entity is the table's name.
func CreateWriteStreamError(project, entity string) error {
	return status.Error(codes.ResourceExhausted, fmt.Sprintf(
		"%s, user_id: %s (status: INSUFFICIENT_TOKENS), you can issue a raise quota request through Google Cloud Console. "+
			"Be sure to include this full error message in the request description. Before requesting an increase, "+
			"please ensure your existing streams have enough utilization in terms of write traffic. For guidelines see "+
			"https://cloud.google.com/bigquery/docs/write-api-best-practices#limit_the_rate_of_stream_creation. Entity: %s",
		CreateWriteStreamPrefix, userID(project), entity))
}

// ActiveStreamsError is the status of a CreateWriteStream call that would
// exceed the project's concurrent application-created streams.
func ActiveStreamsError(project, entity string, active, max int) error {
	return status.Error(codes.ResourceExhausted, fmt.Sprintf(
		"%s, user_id: %s (status: INSUFFICIENT_TOKENS). The project has exceeded its maximum number of active streams. "+
			"Please use existing streams or finalize unused streams. ActiveStreamCount=%d. MaxAllowed=%d. Entity: %s",
		ActiveStreamsPrefix, userID(project), active, max, entity))
}
