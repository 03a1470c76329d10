package ingest

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pipeline's Prometheus collectors. The first three keep
// the names of the postmortem's dashboards.
type Metrics struct {
	ActiveStreams    prometheus.Gauge     // bigquery_storage_active_streams
	AppendLatency    prometheus.Histogram // bigquery_stream_append_latency_seconds
	CommitFailures   prometheus.Counter   // bigquery_commit_failures_total
	RowsCommitted    prometheus.Counter
	BytesCommitted   prometheus.Counter
	CommitLatency    prometheus.Histogram
	EventToVisible   prometheus.Histogram
	Lag              *prometheus.GaugeVec // by partition: source offsets not yet committed (bytes for files)
	BudgetPaused     prometheus.Counter   // seconds
	DeadLetters      prometheus.Counter
	BatchesAbandoned prometheus.Counter
	Retries          *prometheus.CounterVec // by gRPC code
	SourceGaps       *prometheus.CounterVec // by action: fail_closed, skipped
	Fenced           prometheus.Counter     // read-backs that found another owner's state
	StoreRetries     prometheus.Counter     // state writes retried (not stored, partition still owned)
	RowsRejected     prometheus.Counter     // rows the server refused (row_errors), replayed as dead letters
	PartitionPaused  *prometheus.GaugeVec   // by partition: 1 while paused by an error (Health)
	PartitionEvents  *prometheus.CounterVec // by event: assigned, revoked, released (rebalances)
}

// NewMetrics creates the collectors and registers them on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	lat := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		ActiveStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bigquery_storage_active_streams", Help: "PENDING write streams created and not yet committed or abandoned."}),
		AppendLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bigquery_stream_append_latency_seconds", Help: "Time from sending an AppendRows request to its response.", Buckets: lat}),
		CommitFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bigquery_commit_failures_total", Help: "BatchCommitWriteStreams calls that failed or reported stream errors."}),
		RowsCommitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_rows_committed_total", Help: "Rows made visible by BatchCommitWriteStreams."}),
		BytesCommitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_bytes_committed_total", Help: "Serialized row bytes made visible."}),
		CommitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bqstore_ingest_commit_latency_seconds", Help: "Duration of BatchCommitWriteStreams calls.", Buckets: lat}),
		EventToVisible: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bqstore_ingest_event_to_visible_seconds", Help: "Time from reading a batch's first record to its commit.", Buckets: lat}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bqstore_ingest_partition_lag", Help: "Source offsets read but not yet committed, per partition."}, []string{"partition"}),
		BudgetPaused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_memory_budget_paused_seconds_total", Help: "Time partitions spent paused at the memory budget."}),
		DeadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_dead_letters_total", Help: "Records that did not fit the table and went to the dead-letter sink."}),
		BatchesAbandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_batches_abandoned_total", Help: "Unsealed batches thrown away and replayed (lease lost, offset error, stall)."}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_ingest_rpc_retries_total", Help: "RPCs retried with backoff, by gRPC code."}, []string{"code"}),
		SourceGaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_ingest_source_gaps_total", Help: "Source records found deleted (or out of range) before they were committed, by action: fail_closed stops the pipeline, skipped steps over them."}, []string{"action"}),
		Fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_fenced_total", Help: "State writes that failed and whose read-back found a state another owner wrote: the batch is left to that owner."}),
		StoreRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_state_store_retries_total", Help: "State writes (seal, DONE) refused or lost and written again while the partition is still owned (ILLEGAL_GENERATION in a cooperative rebalance, REBALANCE_IN_PROGRESS, coordinator moves)."}),
		RowsRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bqstore_ingest_rows_rejected_total", Help: "Rows the server refused in AppendRows row_errors; their records are replayed as dead letters."}),
		PartitionPaused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bqstore_ingest_partition_paused", Help: "1 while the partition is paused by an error of its worker (reason on /healthz); the other partitions go on."}, []string{"partition"}),
		PartitionEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_ingest_partition_events_total", Help: "Partitions assigned to this run, revoked (cooperatively, sealed batches finished) and released (lost, or the run ended), by event: each rebalance counts its partitions."}, []string{"event"}),
	}
	if reg != nil {
		reg.MustRegister(m.ActiveStreams, m.AppendLatency, m.CommitFailures, m.RowsCommitted, m.BytesCommitted,
			m.CommitLatency, m.EventToVisible, m.Lag, m.BudgetPaused, m.DeadLetters, m.BatchesAbandoned, m.Retries, m.SourceGaps,
			m.Fenced, m.StoreRetries, m.RowsRejected, m.PartitionPaused, m.PartitionEvents)
	}
	return m
}
