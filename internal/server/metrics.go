package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bqstore/bqstore/internal/storage"
)

// storageCollector exports the engine's counters and the active write
// streams by type at scrape time.
type storageCollector struct {
	db *storage.DB

	active    *prometheus.Desc
	appends   *prometheus.Desc
	rows      *prometheus.Desc
	bytes     *prometheus.Desc
	syncs     *prometheus.Desc
	frames    *prometheus.Desc
	failStops *prometheus.Desc
	rolls     *prometheus.Desc
	waits     *prometheus.Desc
	compacts  *prometheus.Desc
	inflight  *prometheus.Desc
	tables    *prometheus.Desc
}

func newStorageCollector(db *storage.DB) *storageCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &storageCollector{
		db:        db,
		active:    d("bqstore_write_active_streams", "Application-created write streams that can take appends (not finalized, committed or expired), by type.", "type"),
		appends:   d("bqstore_storage_appends_total", "Acknowledged appends."),
		rows:      d("bqstore_storage_appended_rows_total", "Rows of acknowledged appends."),
		bytes:     d("bqstore_storage_appended_bytes_total", "Log bytes of acknowledged appends."),
		syncs:     d("bqstore_storage_syncs_total", "fdatasyncs of log files (group commits)."),
		frames:    d("bqstore_storage_synced_frames_total", "Log records made durable by those syncs."),
		failStops: d("bqstore_storage_fail_stops_total", "Tables put in fail-stop after an I/O error."),
		rolls:     d("bqstore_storage_rolls_total", "Log files sealed."),
		waits:     d("bqstore_storage_budget_waits_total", "Appends that waited for the in-flight byte budget."),
		compacts:  d("bqstore_storage_compactions_total", "Compactions that replaced files."),
		inflight:  d("bqstore_storage_inflight_bytes", "Bytes of appends in flight."),
		tables:    d("bqstore_storage_tables", "Tables open."),
	}
}

func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.active, c.appends, c.rows, c.bytes, c.syncs, c.frames, c.failStops, c.rolls, c.waits, c.compacts, c.inflight, c.tables} {
		ch <- d
	}
}

func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.db.Metrics()
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(c.appends, m.Appends)
	counter(c.rows, m.AppendedRows)
	counter(c.bytes, m.AppendedBytes)
	counter(c.syncs, m.Syncs)
	counter(c.frames, m.SyncedFrames)
	counter(c.failStops, m.FailStops)
	counter(c.rolls, m.Rolls)
	counter(c.waits, m.BudgetWaits)
	counter(c.compacts, m.Compactions)
	ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(m.InflightBytes))
	ch <- prometheus.MustNewConstMetric(c.tables, prometheus.GaugeValue, float64(m.Tables))
	active := c.db.ActiveStreams()
	for _, typ := range []struct {
		t    storage.StreamType
		name string
	}{{storage.StreamCommitted, "committed"}, {storage.StreamPending, "pending"}, {storage.StreamBuffered, "buffered"}} {
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(active[typ.t]), typ.name)
	}
}
