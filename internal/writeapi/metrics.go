package writeapi

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the Write API's Prometheus metrics
// (bqstore_write_<name>_{total|seconds|bytes}).
type Metrics struct {
	rows           *prometheus.CounterVec
	bytes          *prometheus.CounterVec
	appendLatency  *prometheus.HistogramVec
	appendErrors   *prometheus.CounterVec
	streamsCreated *prometheus.CounterVec
	commits        *prometheus.CounterVec
	connections    prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_write_rows_total", Help: "Rows appended (durable), by stream type.",
		}, []string{"type"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_write_bytes_total", Help: "Serialized row bytes appended (durable), by stream type.",
		}, []string{"type"}),
		appendLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bqstore_write_append_latency_seconds",
			Help:    "Time from receiving an AppendRows request to its rows being durable, by stream type.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"type"}),
		appendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_write_append_errors_total", Help: "AppendRows requests answered with an error, by gRPC code.",
		}, []string{"code"}),
		streamsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_write_streams_created_total", Help: "Write streams created, by type.",
		}, []string{"type"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bqstore_write_batch_commits_total", Help: "BatchCommitWriteStreams calls by outcome (ok, stream_errors, or the gRPC code).",
		}, []string{"outcome"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bqstore_write_append_connections", Help: "Open AppendRows connections.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.rows, m.bytes, m.appendLatency, m.appendErrors, m.streamsCreated, m.commits, m.connections)
	}
	return m
}
