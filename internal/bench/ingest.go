package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
)

// IngestConfig is the ingest workload: a paced producer writes JSON events
// into an in-process Kafka (kfake on 127.0.0.1) while the exactly-once
// pipeline (package ingest) commits them into the server.
type IngestConfig struct {
	Target
	Rate         int           // events produced per second
	RowBytes     int           // bytes of one JSON event (default 1200)
	Duration     time.Duration // how long the producer runs (default 30 s)
	Partitions   int           // topic partitions (default 4)
	MemoryBudget int64         // pipeline memory budget (0: the pipeline's default)
	BatchAge     time.Duration // pipeline MaxBatchAge (0: the pipeline's default)
	Conns        int           // gRPC connections (0: ingest.Dial's default)
	Drain        time.Duration // how long to wait for the pipeline to catch up (default 2 min)
	Verify       bool          // read the table back through the Read API afterwards

	// External leaves the pipeline to another process (bqstore ingest, or
	// any consumer that commits its offsets to the group): the bench
	// announces the source URL on Announce, waits for the group to form,
	// then produces. Commits are seen by polling the group's committed
	// offsets every 5 ms, so latency is an upper bound (the offset moves
	// when the batch is DONE, just after its commit).
	External    bool
	KafkaPort   int       // kfake's port (0: ephemeral)
	PipelinePID int       // an external pipeline's pid, sampled for CPU and peak RSS
	Announce    io.Writer // where External writes the source URL
	// PipelineCmd, with External, is started by the bench once kfake is
	// up, with "{source}", "{endpoint}" and "{table}" (P:D.T) in its
	// arguments replaced; its pid is sampled, and it is interrupted after
	// the drain.
	PipelineCmd []string
}

// IngestResult adds what only the ingest workload measures to Result.
//
// Result.Rows and Bytes are the events produced (and, when verified, found
// exactly once); Seconds runs from the first event produced to the commit
// of the last one. Latency is event-to-visible: for every event, the
// commit_time of the BatchCommitWriteStreams that made its batch visible
// minus the time the producer created it (its Kafka timestamp), both read
// from this machine's clock. ClientCPU is this process: producer, kfake
// and pipeline together.
type IngestResult struct {
	Result
	AskedRate    float64 `json:"asked_rate"`    // --rate
	ProducedRate float64 `json:"produced_rate"` // events acknowledged by kfake per second of the load
	LoadSeconds  float64 `json:"load_seconds"`  // the producer's run
	// CommittedRate is the events committed while the producer ran, per
	// second of the load: equal to the produced rate minus the backlog
	// (a batch age or so) when the pipeline keeps up.
	CommittedRate float64 `json:"committed_rate"`
	DrainSeconds  float64 `json:"drain_seconds"` // from the producer's end to the last commit
	Batches       int     `json:"batches"`
	Abandoned     int64   `json:"batches_abandoned"`
	BudgetPaused  float64 `json:"budget_paused_s"` // partition-seconds paused at the memory budget
	// ProcessRSSMB is this process's peak RSS (VmHWM) before the
	// verification read: pipeline, producer and kfake's unconsumed
	// backlog (committed records are deleted from kfake every 250 ms).
	ProcessRSSMB float64 `json:"process_peak_rss_mb"`
	// HeapPeakMB is the largest Go heap (live and not yet swept objects)
	// seen every 100 ms during the load and drain: the same three parts.
	HeapPeakMB float64 `json:"process_peak_heap_mb"`
	// PipelineHeapMB is the largest heap in use by the pipeline alone:
	// heap profiles taken every 2 s, each allocation attributed by its
	// stack to kfake, to the producer (this package and franz-go's
	// producer), or else to the pipeline (ingest, its Kafka consumer,
	// gRPC). A process running only the pipeline would need about twice
	// this in RSS with the default GOGC=100.
	PipelineHeapMB float64 `json:"pipeline_peak_heap_mb"`
	KfakeHeapMB    float64 `json:"kfake_peak_heap_mb"`
	LoadAvg        string  `json:"loadavg"` // /proc/loadavg at the end of the load
	// Latency says how commits were seen: "commit_time" (in process) or
	// "offset_poll" (an external pipeline; an upper bound).
	Latency       string  `json:"latency_source"`
	PipelineCPU   float64 `json:"pipeline_cpu_s,omitempty"`       // external pipeline
	PipelineRSSMB float64 `json:"pipeline_peak_rss_mb,omitempty"` // external pipeline
}

// Print writes the human summary, or one JSON line.
func (r *IngestResult) Print(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	fmt.Fprintf(w, "ingest partitions=%d table=%s\n", r.Streams, r.Table)
	fmt.Fprintf(w, "  produced   %.0f events/s asked, %.0f events/s produced over %.1fs (%.0f%%)\n",
		r.AskedRate, r.ProducedRate, r.LoadSeconds, 100*r.ProducedRate/r.AskedRate)
	fmt.Fprintf(w, "  committed  %.0f events/s during the load; %d events in %.2fs (drain %.2fs): %.0f events/s, %.1f MB/s\n",
		r.CommittedRate, r.Rows, r.Seconds, r.DrainSeconds, r.RowsPerSec, r.MBPerSec)
	if r.LatencyMax > 0 {
		fmt.Fprintf(w, "  event-to-visible  p50 %s  p90 %s  p99 %s  max %s (%s)\n", ms(r.LatencyP50), ms(r.LatencyP90), ms(r.LatencyP99), ms(r.LatencyMax), r.Latency)
	}
	fmt.Fprintf(w, "  batches    %d committed, %d abandoned, %.1f partition-s paused at the memory budget\n", r.Batches, r.Abandoned, r.BudgetPaused)
	if r.PipelineRSSMB > 0 {
		fmt.Fprintf(w, "  pipeline   CPU %.2fs (%.0f%% of one core), peak RSS %.0f MB (its own process)\n", r.PipelineCPU, 100*r.PipelineCPU/r.Seconds, r.PipelineRSSMB)
	}
	parts := "producer + kfake"
	if r.Latency != "offset_poll" {
		parts = "pipeline + producer + kfake"
		fmt.Fprintf(w, "  heap       pipeline %.0f MB, kfake %.0f MB at their peaks (in use, from heap profiles)\n", r.PipelineHeapMB, r.KfakeHeapMB)
	}
	fmt.Fprintf(w, "  process    CPU %.2fs (%.0f%% of one core), peak RSS %.0f MB, peak Go heap %.0f MB (%s)\n",
		r.ClientCPU, 100*r.ClientCPU/r.Seconds, r.ProcessRSSMB, r.HeapPeakMB, parts)
	if r.ServerCPU > 0 {
		fmt.Fprintf(w, "  server     CPU %.2fs (%.0f%% of one core), peak RSS %.0f MB\n", r.ServerCPU, 100*r.ServerCPU/r.Seconds, r.ServerRSSMB)
	}
	fmt.Fprintf(w, "  loadavg    %s\n", r.LoadAvg)
	verified := "yes: every produced event is in the table exactly once"
	switch {
	case r.VerifyError != "":
		verified = "FAILED: " + r.VerifyError
	case !r.Verified:
		verified = "no (--verify=false)"
	}
	fmt.Fprintf(w, "  verified   %s\n", verified)
	return nil
}

// eventEncoder builds the JSON events: benchSchema's columns, the payload
// padding each event to the asked size.
type eventEncoder struct {
	rowBytes int
	pad      string
}

func newEventEncoder(rowBytes int) *eventEncoder {
	var b strings.Builder
	for i := range rowBytes {
		b.WriteByte('a' + byte(i%26))
	}
	return &eventEncoder{rowBytes: rowBytes, pad: b.String()}
}

func (e *eventEncoder) encode(id int64, micros int64) []byte {
	dst := make([]byte, 0, e.rowBytes+8)
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, micros, 10)
	dst = append(dst, `,"key":"key-`...)
	k := strconv.AppendInt(nil, id, 10)
	for range 32 - len(k) {
		dst = append(dst, '0')
	}
	dst = append(dst, k...)
	dst = append(dst, `","cat":"`...)
	dst = append(dst, categories[id%int64(len(categories))]...)
	dst = append(dst, `","value":`...)
	dst = strconv.AppendFloat(dst, float64(id%1000)/8, 'g', -1, 64)
	dst = append(dst, `,"payload":"`...)
	n := max(0, e.rowBytes-len(dst)-2)
	dst = append(dst, e.pad[:min(n, len(e.pad))]...)
	return append(dst, `"}`...)
}

// commitRange is one batch's commit, as the pipeline reported it.
type commitRange struct {
	part     int32
	from, to int64
	at       int64 // commit_time, unix nanoseconds
}

// Ingest runs the ingest workload and returns what it measured.
func Ingest(ctx context.Context, cfg IngestConfig) (*IngestResult, error) {
	if cfg.Rate <= 0 {
		return nil, errors.New("--rate must be positive")
	}
	if cfg.RowBytes <= 0 {
		cfg.RowBytes = 1200
	}
	if cfg.RowBytes < 150 {
		return nil, fmt.Errorf("--row-bytes %d: an event needs at least 150 bytes", cfg.RowBytes)
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 30 * time.Second
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 4
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 2 * time.Minute
	}
	created, err := ensureTable(ctx, &cfg.Target, benchSchema)
	if err != nil {
		return nil, err
	}
	var base idSums
	if !created && cfg.Verify {
		if base, err = readIDSums(ctx, cfg.Target); err != nil {
			return nil, fmt.Errorf("verify: the table's rows before the run: %w", err)
		}
	}
	if created && cfg.Cleanup {
		defer func() { _ = dropTable(cfg.Target) }()
	}
	res := &IngestResult{Result: Result{Workload: "ingest", Streams: cfg.Partitions, Table: cfg.tablePath()},
		AskedRate: float64(cfg.Rate)}

	const topic, group = "events", "bench"
	kopts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(int32(cfg.Partitions), topic),
		// Small segments, so that deleting committed records frees memory
		// (kfake drops whole segments, like Kafka).
		kfake.BrokerConfigs(map[string]string{"log.segment.bytes": strconv.Itoa(8 << 20)})}
	if cfg.KafkaPort > 0 {
		kopts = append(kopts, kfake.Ports(cfg.KafkaPort))
	}
	kc, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	// What the pipeline committed, per partition, and every batch's range.
	var (
		cmu       sync.Mutex
		commits   []commitRange
		doneTo    = make([]int64, cfg.Partitions)
		committed atomic.Int64
	)
	onCommit := func(p int, from, to int64, at time.Time) {
		cmu.Lock()
		commits = append(commits, commitRange{part: int32(p), from: from, to: to, at: at.UnixNano()})
		doneTo[p] = max(doneTo[p], to)
		cmu.Unlock()
		committed.Add(to - from)
	}
	metrics := ingest.NewMetrics(nil)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var runErr chan error // stays nil (never ready) for an external pipeline
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	if cfg.External {
		res.Latency = "offset_poll"
		url := fmt.Sprintf("kafka://%s/%s?group=%s", strings.Join(brokers, ","), topic, group)
		if cfg.Announce != nil {
			fmt.Fprintf(cfg.Announce, "source %s (waiting for the group to form)\n", url)
		}
		if len(cfg.PipelineCmd) > 0 {
			args := make([]string, len(cfg.PipelineCmd))
			for i, a := range cfg.PipelineCmd {
				args[i] = strings.NewReplacer("{source}", url, "{endpoint}", cfg.Endpoint,
					"{table}", fmt.Sprintf("%s:%s.%s", cfg.Project, cfg.Dataset, cfg.Table)).Replace(a)
			}
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stdout, cmd.Stderr = cfg.Announce, cfg.Announce
			if err := cmd.Start(); err != nil {
				return nil, fmt.Errorf("pipeline command: %w", err)
			}
			cfg.PipelinePID = cmd.Process.Pid
			defer func() {
				_ = cmd.Process.Signal(os.Interrupt)
				_ = cmd.Wait()
			}()
		}
		if err := waitGroup(ctx, kadm.NewClient(adm), group, cfg.Drain); err != nil {
			return nil, err
		}
		pollDone := make(chan struct{})
		go func() {
			defer close(pollDone)
			pollOffsets(runCtx, kadm.NewClient(adm), topic, group, cfg.Partitions, onCommit)
		}()
		defer func() { stopRun(); <-pollDone }()
	} else {
		res.Latency = "commit_time"
		conn, err := ingest.Dial(ctx, cfg.Endpoint, cfg.Insecure, cfg.Conns)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		pcfg := ingest.Config{
			Start:  ingest.StartEarliest,
			Client: conn.Write, Table: cfg.tablePath(),
			Source:       &ingest.KafkaSource{Brokers: brokers, Topic: topic, Group: group},
			Unknown:      rows.UnknownReject,
			MemoryBudget: cfg.MemoryBudget, MaxBatchAge: cfg.BatchAge,
			Metrics: metrics,
			OnCommit: func(c ingest.Committed) {
				p, err := strconv.Atoi(c.Partition[strings.LastIndexByte(c.Partition, '/')+1:])
				if err != nil || p < 0 || p >= cfg.Partitions {
					return
				}
				onCommit(p, c.From, c.To, c.Time)
			},
		}
		runErr = make(chan error, 1)
		go func() { runErr <- ingest.Run(runCtx, pcfg) }()
	}

	// Committed records are deleted from kfake (as retention would), so
	// that this process's RSS is not the whole topic's history.
	trimCtx, stopTrim := context.WithCancel(ctx)
	trimDone := make(chan struct{})
	go func() {
		defer close(trimDone)
		trim(trimCtx, kadm.NewClient(adm), topic, &cmu, doneTo)
	}()
	defer func() { stopTrim(); <-trimDone }()

	heapCtx, stopHeap := context.WithCancel(ctx)
	heapPeak := make(chan heapPeaks, 1)
	go func() { heapPeak <- sampleHeap(heapCtx) }()
	defer func() {
		if stopHeap != nil {
			stopHeap()
			<-heapPeak
		}
	}()

	cpu0 := selfCPU()
	var srv0, pipe0 procSample
	if cfg.ServerPID > 0 {
		srv0 = sampleProc(cfg.ServerPID)
	}
	if cfg.PipelinePID > 0 {
		pipe0 = sampleProc(cfg.PipelinePID)
	}
	start := time.Now()
	produced, bytes, produceTimes, err := produce(ctx, brokers, topic, cfg, newEventEncoder(cfg.RowBytes), runErr)
	loadEnd := time.Now()
	res.LoadSeconds = loadEnd.Sub(start).Seconds()
	res.LoadAvg = loadAvg()
	committedInLoad := committed.Load()
	if err != nil {
		return nil, err
	}
	res.Rows, res.Bytes = produced, bytes
	res.ProducedRate = float64(produced) / res.LoadSeconds
	res.CommittedRate = float64(committedInLoad) / res.LoadSeconds

	// Drain: wait until every produced event is committed.
	ends := make([]int64, cfg.Partitions)
	for p, ts := range produceTimes {
		ends[p] = int64(len(ts))
	}
	deadline := time.NewTimer(cfg.Drain)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var lastCommit time.Time
	for {
		cmu.Lock()
		caughtUp := true
		for p := range ends {
			if doneTo[p] < ends[p] {
				caughtUp = false
			}
		}
		if caughtUp && len(commits) > 0 {
			lastCommit = time.Unix(0, commits[len(commits)-1].at)
			for _, c := range commits {
				if t := time.Unix(0, c.at); t.After(lastCommit) {
					lastCommit = t
				}
			}
		}
		cmu.Unlock()
		if caughtUp {
			break
		}
		select {
		case err := <-runErr:
			return nil, fmt.Errorf("pipeline stopped: %w", err)
		case <-deadline.C:
			return nil, fmt.Errorf("pipeline did not catch up within %s of the load's end: %d of %d events committed",
				cfg.Drain, committed.Load(), produced)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	if lastCommit.Before(loadEnd) {
		lastCommit = loadEnd
	}
	res.DrainSeconds = lastCommit.Sub(loadEnd).Seconds()
	res.ProcessRSSMB = float64(sampleProc(os.Getpid()).peakRSS) / (1 << 20)
	stopHeap()
	hp := <-heapPeak
	res.HeapPeakMB = float64(hp.total) / (1 << 20)
	res.PipelineHeapMB = float64(hp.pipeline) / (1 << 20)
	res.KfakeHeapMB = float64(hp.kfake) / (1 << 20)
	stopHeap = nil
	if cfg.PipelinePID > 0 {
		ps := sampleProc(cfg.PipelinePID)
		res.PipelineCPU = (ps.cpu - pipe0.cpu).Seconds()
		res.PipelineRSSMB = float64(ps.peakRSS) / (1 << 20)
	}
	stopRun()
	if runErr != nil {
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
	}
	stopTrim()
	<-trimDone

	res.finish(start, cpu0, srv0, cfg.ServerPID)
	res.Seconds = lastCommit.Sub(start).Seconds()
	res.RowsPerSec = float64(res.Rows) / res.Seconds
	res.MBPerSec = float64(res.Bytes) / res.Seconds / 1e6
	res.Batches = len(commits)
	res.Abandoned = int64(counter(metrics.BatchesAbandoned))
	res.BudgetPaused = counter(metrics.BudgetPaused)

	lat, err := latencies(commits, produceTimes)
	if err != nil {
		return res, err
	}
	res.percentiles(lat)
	if cfg.Verify {
		if err := verifyIDs(ctx, cfg.Target, base, produced); err != nil {
			res.VerifyError = err.Error()
			return res, fmt.Errorf("verify: %w", err)
		}
		res.Verified = true
	}
	return res, nil
}

// produce runs the paced producer for cfg.Duration: event i is due at
// start + i/rate and is created (timestamped) when the producer gets to
// it, so a producer that falls behind shows as a produced rate below the
// asked one, not as latency. It returns the events acknowledged, their
// bytes and, per partition, each offset's creation time (unix ns).
func produce(ctx context.Context, brokers []string, topic string, cfg IngestConfig, enc *eventEncoder, runErr <-chan error) (int64, int64, [][]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(10000),
	)
	if err != nil {
		return 0, 0, nil, err
	}
	defer cl.Close()
	times := make([][]int64, cfg.Partitions)
	per := max(1024, int(int64(cfg.Rate)*int64(cfg.Duration/time.Second)/int64(cfg.Partitions)))
	for p := range times {
		times[p] = make([]int64, 0, per+per/8)
	}
	var (
		mu       sync.Mutex
		firstErr error
		acked    atomic.Int64
		bytes    atomic.Int64
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("produce: %w", err)
			}
			mu.Unlock()
			return
		}
		acked.Add(1)
		bytes.Add(int64(len(r.Value)))
		mu.Lock()
		ts := times[r.Partition]
		for int64(len(ts)) <= r.Offset {
			ts = append(ts, 0)
		}
		ts[r.Offset] = r.Timestamp.UnixNano()
		times[r.Partition] = ts
		mu.Unlock()
	}
	start := time.Now()
	end := start.Add(cfg.Duration)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var id int64
	for now := start; now.Before(end); now = time.Now() {
		due := int64(float64(cfg.Rate) * now.Sub(start).Seconds())
		for ; id < due; id++ {
			t := time.Now()
			cl.Produce(ctx, &kgo.Record{
				Partition: int32(id % int64(cfg.Partitions)),
				Timestamp: t,
				Value:     enc.encode(id, t.UnixMicro()),
			}, promise)
		}
		select {
		case err := <-runErr:
			return 0, 0, nil, fmt.Errorf("pipeline stopped during the load: %w", err)
		case <-ctx.Done():
			return 0, 0, nil, ctx.Err()
		case <-tick.C:
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, 0, nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return 0, 0, nil, firstErr
	}
	if acked.Load() != id {
		return 0, 0, nil, fmt.Errorf("produce: %d of %d events acknowledged", acked.Load(), id)
	}
	return id, bytes.Load(), times, nil
}

// latencies returns every event's commit time minus its creation time, in
// seconds. Each produced offset must be covered by exactly one commit.
func latencies(commits []commitRange, times [][]int64) ([]float64, error) {
	var n int64
	for _, ts := range times {
		n += int64(len(ts))
	}
	out := make([]float64, 0, n)
	seen := make([]int64, len(times)) // offsets covered so far, per partition
	for _, c := range commits {
		ts := times[c.part]
		for off := c.from; off < c.to && off < int64(len(ts)); off++ {
			out = append(out, float64(c.at-ts[off])/1e9)
		}
		seen[c.part] += c.to - c.from
	}
	for p, ts := range times {
		if seen[p] < int64(len(ts)) {
			return nil, fmt.Errorf("partition %d: commits cover %d offsets, %d were produced", p, seen[p], len(ts))
		}
	}
	return out, nil
}

// waitGroup waits until the consumer group has members and a stable
// assignment.
func waitGroup(ctx context.Context, adm *kadm.Client, group string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		gs, err := adm.DescribeGroups(ctx, group)
		if err == nil {
			if g, ok := gs[group]; ok && g.Err == nil && g.State == "Stable" && len(g.Members) > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no pipeline joined group %s within %s", group, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pollOffsets reports every move of the group's committed offsets as a
// commit of the range it covers, until ctx ends.
func pollOffsets(ctx context.Context, adm *kadm.Client, topic, group string, parts int, onCommit func(p int, from, to int64, at time.Time)) {
	last := make([]int64, parts)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		now := time.Now()
		if err == nil {
			for p := range parts {
				if o, ok := offs.Lookup(topic, int32(p)); ok && o.Err == nil && o.At > last[p] {
					onCommit(p, last[p], o.At, now)
					last[p] = o.At
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// trim deletes the records every partition has committed from kfake,
// every 250 ms, until ctx ends.
func trim(ctx context.Context, adm *kadm.Client, topic string, mu *sync.Mutex, doneTo []int64) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := make([]int64, len(doneTo))
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		offs := kadm.Offsets{}
		mu.Lock()
		for p, to := range doneTo {
			if to > last[p] {
				offs.Add(kadm.Offset{Topic: topic, Partition: int32(p), At: to})
				last[p] = to
			}
		}
		mu.Unlock()
		if len(offs) > 0 {
			_, _ = adm.DeleteRecords(ctx, offs) // best effort: only memory is at stake
		}
	}
}

type heapPeaks struct{ total, pipeline, kfake uint64 }

// sampleHeap returns the largest Go heap seen every 100 ms, and the
// largest pipeline and kfake shares of heap profiles taken every 2 s,
// until ctx ends.
func sampleHeap(ctx context.Context) heapPeaks {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var peak heapPeaks
	var buf bytes.Buffer
	for i := 0; ; i++ {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			peak.total = max(peak.total, sample[0].Value.Uint64())
		}
		if i%20 == 19 {
			buf.Reset()
			if err := pprof.Lookup("heap").WriteTo(&buf, 1); err == nil {
				pl, kf := heapShares(buf.Bytes())
				peak.pipeline = max(peak.pipeline, pl)
				peak.kfake = max(peak.kfake, kf)
			}
		}
		select {
		case <-ctx.Done():
			return peak
		case <-tick.C:
		}
	}
}

// heapShares sums the in-use bytes of a heap profile in its text form
// (debug=1) by who allocated them: kfake, the producer, or the pipeline.
func heapShares(prof []byte) (pipeline, kfake uint64) {
	var inuse uint64
	owner := ""
	rate := float64(runtime.MemProfileRate)
	flush := func() {
		switch owner {
		case "kfake":
			kfake += inuse
		case "pipeline":
			pipeline += inuse
		}
		inuse, owner = 0, ""
	}
	for line := range strings.Lines(string(prof)) {
		switch {
		case strings.HasPrefix(line, "#"):
			if owner != "pipeline" {
				continue // decided by an inner frame already, or not a record
			}
			switch {
			case strings.Contains(line, "franz-go/pkg/kfake."):
				owner = "kfake"
			case strings.Contains(line, "bqstore/internal/bench."),
				strings.Contains(line, "kgo.(*Client).Produce"), strings.Contains(line, "kgo.(*sink)"),
				strings.Contains(line, "kgo.(*recBuf)"), strings.Contains(line, "kgo.(*produceRequest)"):
				owner = "producer"
			}
		case strings.HasPrefix(line, "heap profile:"):
			// "heap profile: ... @ heap/<2*MemProfileRate>"
			if i := strings.LastIndex(line, "heap/"); i >= 0 {
				if r, err := strconv.ParseFloat(strings.TrimSpace(line[i+5:]), 64); err == nil && r > 0 {
					rate = r / 2
				}
			}
		case strings.Contains(line, " @ "):
			flush()
			// "inuse_objects: inuse_bytes [alloc_objects: alloc_bytes] @ ...",
			// sampled: scaled up as pprof does.
			if f := strings.Fields(line); len(f) > 1 {
				objs, err1 := strconv.ParseFloat(strings.TrimSuffix(f[0], ":"), 64)
				b, err2 := strconv.ParseFloat(f[1], 64)
				if err1 == nil && err2 == nil && objs > 0 {
					if rate > 0 {
						b /= 1 - math.Exp(-b/objs/rate)
					}
					inuse, owner = uint64(b), "pipeline"
				}
			}
		case strings.TrimSpace(line) == "":
			flush()
		}
	}
	flush()
	return pipeline, kfake
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
