package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/ingest/rows"
)

const ingestUsage = "[--endpoint HOST:PORT] --table [project:]dataset.table --source SOURCE --state-dir DIR [--start earliest] [flags]\n" +
	"       bqstore ingest [--endpoint HOST:PORT] --route TOPIC=[project:]dataset.table[,TOPIC=...] --source kafka://BROKER/?group=G [flags]\n\n" +
	"SOURCE is file:PATH (newline-delimited JSON; file:- reads standard input)\n" +
	"or kafka://BROKER[,BROKER]/TOPIC[,TOPIC...]?group=G[&tls=true][&sasl=MECHANISM]\n" +
	"(one JSON record per message). tls=true dials the brokers over TLS (CA bundle\n" +
	"in BQSTORE_KAFKA_CA_FILE, default the system roots; a client certificate in\n" +
	"BQSTORE_KAFKA_CERT_FILE and BQSTORE_KAFKA_KEY_FILE); sasl=plain, scram-sha-256\n" +
	"or scram-sha-512 authenticates with BQSTORE_KAFKA_USERNAME and\n" +
	"BQSTORE_KAFKA_PASSWORD (never in the URL).\n\n" +
	"--route, instead of --table, sends each Kafka topic to its own table, with one\n" +
	"consumer group over all of them (the URL may leave the topics out: the routed\n" +
	"ones are consumed; if it names some, each needs a route).\n\n" +
	"Re-running the same command after a crash continues where it stopped: every\n" +
	"record is committed to the table exactly once. A partition with no stored\n" +
	"state (the first run; for Kafka, a new consumer group or one whose committed\n" +
	"offsets expired) starts where --start says: earliest (the oldest record\n" +
	"still kept), latest (only records produced from now on), an offset or a\n" +
	"time. The run refuses to guess without --start, so a lost state is never a\n" +
	"silent replay; once a partition has a state, --start is ignored."

// runIngestCmd runs the exactly-once ingestion pipeline into one table (or,
// with --route, one per Kafka topic).
func runIngestCmd(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "ingest", ingestUsage)
	g := addGRPCFlags(env, fs)
	tableFlag := fs.String("table", "", "destination table as [project:]dataset.table")
	routeFlag := fs.String("route", "", "Kafka fan-out, instead of --table: TOPIC=[project:]dataset.table[,TOPIC=...], each topic into its table; every consumed topic needs a route, and a state written for one route refuses another")
	sourceFlag := fs.String("source", "", "file:PATH, file:- (standard input) or kafka://BROKER[,BROKER]/TOPIC[,TOPIC...]?group=G")
	stateDir := fs.String("state-dir", "", "directory for the file partitions' durable state (seals); Kafka keeps it in the group's committed offsets")
	deadLetter := fs.String("dead-letter", "", "file receiving records that do not fit the table, with the reason (default: such a record stops the run)")
	deadLetterTable := fs.String("dead-letter-table", "", "table ([project:]dataset.table) receiving records that do not fit, committed with the data in the same seal: exactly once for Kafka too; columns source STRING, partition INTEGER, offset INTEGER, key BYTES, raw BYTES, error STRING, time TIMESTAMP")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus /metrics and /healthz (JSON: paused partitions and why; 503 while one is) on this address (e.g. 127.0.0.1:9464)")
	budget := fs.String("memory-budget", "256MiB", "bytes read, mapped and in flight at most (suffixes KiB, MiB, GiB, KB, MB, GB)")
	unknown := fs.String("unknown-fields", "reject", "JSON keys naming no column: reject (dead letter) or ignore")
	startFlag := fs.String("start", "", "where a partition with no stored state begins: earliest, latest, an offset (Kafka: record offset; files: byte offset of a line) or an RFC 3339 time (Kafka); required on a first run, ignored once a state exists")
	complete := fs.Bool("complete", false, "file sources: the input is complete, so a last line without a newline is a record (default: such a line is left for a later run, since a writer may still be appending it)")
	skipDeleted := fs.Bool("skip-deleted-records", false, "Kafka: step over source records deleted (retention, DeleteRecords) before they were committed, logging and counting the gap; default: stop with an error naming the offsets")
	batchRows := fs.Int64("batch-rows", 1_000_000, "close a batch at this many rows")
	batchBytes := fs.String("batch-bytes", "64MiB", "close a batch at this many serialized row bytes")
	batchAge := fs.Duration("batch-age", time.Second, "close a batch this long after it started")
	createRate := fs.Float64("create-rate", 20, "CreateWriteStream calls per second at most; every batch takes a stream, so this also caps batches per second (BigQuery's latency grows past 40-50 calls/s and a longer-term quota applies); 0: no limit (bqstore serve without a configured quota)")
	conns := fs.Int("conns", 4, "gRPC connections in the pool")
	logFormat := fs.String("log-format", envDefault(env, "BQSTORE_LOG_FORMAT", "text"), "log format: text or json (env BQSTORE_LOG_FORMAT)")
	logLevel := fs.String("log-level", envDefault(env, "BQSTORE_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env BQSTORE_LOG_LEVEL)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	var missing []string
	for _, req := range []struct{ name, v string }{{"--table (or --route)", *tableFlag + *routeFlag}, {"--source", *sourceFlag}} {
		if req.v == "" {
			missing = append(missing, req.name)
		}
	}
	if *tableFlag != "" && *routeFlag != "" {
		return usagef("--table and --route: give one")
	}
	if *routeFlag != "" && !strings.HasPrefix(*sourceFlag, "kafka://") {
		return usagef("--route routes Kafka topics: --source must be kafka://")
	}
	if *stateDir == "" && !strings.HasPrefix(*sourceFlag, "kafka://") {
		missing = append(missing, "--state-dir (for file sources)")
	}
	if len(missing) > 0 {
		return usagef("missing required flags: %s (see bqstore ingest -h)", strings.Join(missing, ", "))
	}
	plaintext, err := g.resolve()
	if err != nil {
		return err
	}
	var table string
	var routes []ingest.Route
	if *routeFlag != "" {
		if routes, err = parseRoutes(*routeFlag, g.project); err != nil {
			return err
		}
	} else {
		r, err := parseRef(*tableFlag, g.project)
		if err != nil {
			return err
		}
		if r.table == "" {
			return usagef("--table %q: want [project:]dataset.table", *tableFlag)
		}
		table = fmt.Sprintf("projects/%s/datasets/%s/tables/%s", r.project, r.dataset, r.table)
	}
	var dlTable string
	if *deadLetterTable != "" {
		if *deadLetter != "" {
			return usagef("--dead-letter and --dead-letter-table: give one")
		}
		dr, err := parseRef(*deadLetterTable, g.project)
		if err != nil {
			return err
		}
		if dr.table == "" {
			return usagef("--dead-letter-table %q: want [project:]dataset.table", *deadLetterTable)
		}
		dlTable = fmt.Sprintf("projects/%s/datasets/%s/tables/%s", dr.project, dr.dataset, dr.table)
	}
	uf, err := rows.ParseUnknownFields(*unknown)
	if err != nil {
		return usagef("--unknown-fields: want reject or ignore, not %q", *unknown)
	}
	mem, err := parseBytes(*budget)
	if err != nil {
		return usagef("--memory-budget: %v", err)
	}
	maxBytes, err := parseBytes(*batchBytes)
	if err != nil {
		return usagef("--batch-bytes: %v", err)
	}
	var start ingest.StartPosition
	if *startFlag != "" {
		if start, err = ingest.ParseStart(*startFlag); err != nil {
			return usagef("--start: %v", err)
		}
	}
	var rate float64
	switch {
	case *createRate < 0:
		return usagef("--create-rate %g: want calls per second, or 0 for no limit", *createRate)
	case *createRate == 0:
		rate = math.Inf(1)
	default:
		rate = *createRate
	}
	logger, err := newLogger(env, *logFormat, *logLevel)
	if err != nil {
		return err
	}

	var src ingest.Source
	switch {
	case strings.HasPrefix(*sourceFlag, "file:"):
		path := strings.TrimPrefix(*sourceFlag, "file:")
		if path == "" {
			return usagef("--source %q: empty path", *sourceFlag)
		}
		src = &ingest.FileSource{Path: path, Stdin: newCtxReader(ctx, env.Stdin), Complete: *complete}
	case strings.HasPrefix(*sourceFlag, "kafka://"):
		ks, err := ingest.ParseKafkaURL(*sourceFlag)
		if err != nil {
			return usagef("--source: %v", err)
		}
		if err := ks.Secure(env.LookupEnv); err != nil {
			return usagef("--source: %v", err)
		}
		if len(routes) > 0 {
			if err := applyRoutes(ks, routes, dlTable); err != nil {
				return err
			}
		}
		if len(ks.SourceTopics()) == 0 {
			return usagef("--source %q names no topic: want kafka://BROKER/TOPIC?group=G, or --route", *sourceFlag)
		}
		ks.Logger = logger
		src = ks
	default:
		return usagef("--source %q: want file:PATH or kafka://BROKER/TOPIC?group=G", *sourceFlag)
	}

	// Kafka keeps the partitions' state in the group's committed offsets;
	// files keep it in the state directory.
	var ledger ingest.Ledger
	if src.Ledger() == nil {
		fl, err := ingest.OpenFileLedger(*stateDir)
		if err != nil {
			return err
		}
		defer fl.Close()
		ledger = fl
	}
	var dl *ingest.DeadLetters
	if *deadLetter != "" {
		if dl, err = ingest.OpenDeadLetters(*deadLetter); err != nil {
			return err
		}
		defer dl.Close()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := ingest.NewMetrics(reg)
	health := ingest.NewHealth()
	if *metricsAddr != "" {
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		mux.Handle("GET /healthz", health)
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = hs.Serve(ln)
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
			<-done
		}()
		logger.Info("metrics", "addr", ln.Addr().String())
	}

	if err := waitEndpoint(ctx, logger, g.endpoint, plaintext); err != nil {
		return err
	}
	conn, err := ingest.Dial(ctx, g.endpoint, plaintext, *conns)
	if err != nil {
		return credentialsHint(err, g.endpoint)
	}
	defer conn.Close()

	if len(routes) > 0 {
		logger.Info("ingesting", "routes", *routeFlag, "source", *sourceFlag)
	} else {
		logger.Info("ingesting", "table", table, "source", *sourceFlag, "state_dir", *stateDir)
	}
	t0 := time.Now()
	if w, ok := env.Stderr.(io.Reader); ok && isTerminal(w) && strings.HasPrefix(*sourceFlag, "file:") {
		stop := showProgress(env, metrics, t0)
		defer stop()
	} else {
		stop := logProgress(logger, metrics, t0, ingestProgressEvery)
		defer stop()
	}
	err = ingest.Run(ctx, ingest.Config{
		Client: conn.Write, Table: table, Routes: routes, Source: src, Ledger: ledger, DeadLetters: dl, DeadLetterTable: dlTable, Start: start,
		Unknown: uf, SkipDeletedRecords: *skipDeleted, MemoryBudget: mem, MaxBatchRows: *batchRows, MaxBatchBytes: maxBytes, MaxBatchAge: *batchAge,
		CreateRate: rate, Metrics: metrics, Health: health, Logger: logger,
	})
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted: what this run did before the one line Main prints.
			logSummary(logger, "stopped", metrics, time.Since(t0), *deadLetter)
		}
		return kafkaAuthHint(err, src)
	}
	logSummary(logger, "done", metrics, time.Since(t0), *deadLetter)
	return nil
}

// showProgress prints a status line on the terminal every half second
// until stop is called.
func showProgress(env *Env, m *ingest.Metrics, t0 time.Time) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(env.Stderr, "\r%s\n", ingestProgress(m, time.Since(t0)))
				return
			case <-tick.C:
				fmt.Fprintf(env.Stderr, "\r%s", ingestProgress(m, time.Since(t0)))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// ingestProgress renders rows committed, their rate and dead letters.
func ingestProgress(m *ingest.Metrics, elapsed time.Duration) string {
	var rowsM, deadM dto.Metric
	_ = m.RowsCommitted.Write(&rowsM)
	_ = m.DeadLetters.Write(&deadM)
	rows := rowsM.GetCounter().GetValue()
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = rows / s
	}
	return fmt.Sprintf("%.0f rows committed (%.0f rows/s), %.0f dead letters, %s", rows, rate, deadM.GetCounter().GetValue(), elapsed.Round(time.Second))
}

// parseBytes parses "256MiB", "1GB", "1048576".
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := s, int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("invalid size %q (want a positive number with an optional KiB/MiB/GiB/KB/MB/GB suffix)", s)
	}
	if v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return v * mult, nil
}

// kafkaAuthHint names the credentials when a broker that wants SASL hangs
// up on the run: brokers answer a failed login by closing the connection,
// which the client reports as a bare EOF.
func kafkaAuthHint(err error, src ingest.Source) error {
	ks, ok := src.(*ingest.KafkaSource)
	if !ok || ks.SASL == "" || !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
		return err
	}
	return fmt.Errorf("%w (the broker closed the connection: check sasl=%s and the credentials in %s and %s)", err, ks.SASL, ingest.EnvKafkaUsername, ingest.EnvKafkaPassword)
}
