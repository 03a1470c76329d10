package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/bench"
)

const benchUsage = "usage: bqstore bench write|read|query|ingest [flags]\n\n" +
	"  write   append rows through managedwriter and read them back\n" +
	"  read    read a table through the Read API\n" +
	"  query   run a fixed set of queries on a table of bench write\n" +
	"  ingest  run the ingest pipeline from an in-process Kafka\n\n" +
	"Run 'bqstore bench WORKLOAD -h' for the flags of a workload."

// benchPipelineExample is --pipeline-cmd's example (it must work as is:
// TestBenchPipelineExample).
const benchPipelineExample = "bqstore ingest --endpoint {endpoint} --table {table} --source {source} --start earliest"

func runBench(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("want a workload: write, read, query or ingest (see bqstore bench -h)")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(env.Stderr, benchUsage)
		return flag.ErrHelp
	case "write":
		return runBenchWrite(ctx, env, args[1:])
	case "read":
		return runBenchRead(ctx, env, args[1:])
	case "query":
		return runBenchQuery(ctx, env, args[1:])
	case "ingest":
		return runBenchIngest(ctx, env, args[1:])
	}
	return usagef("unknown workload %q (write, read, query, ingest; see bqstore bench -h)", args[0])
}

// benchFlags are the flags that say where the server and the table are.
type benchFlags struct {
	g   *grpcFlags
	t   *bench.Target
	env *Env
}

// targetFlags registers the flags that say where the server is.
func targetFlags(fs *flag.FlagSet, env *Env, t *bench.Target) *benchFlags {
	g := addGRPCFlags(env, fs)
	fs.StringVar(&t.API, "api", envDefault(env, "BQSTORE_API", DefaultAPI), "REST v2 base URL for table creation (env BQSTORE_API)")
	fs.StringVar(&t.Dataset, "dataset", "bench", "dataset (created if missing)")
	fs.StringVar(&t.Table, "table", "", "table, or [project:]dataset.table (write: created if missing, default a new bench_<time> table; read: default the dataset's newest table)")
	fs.IntVar(&t.ServerPID, "server-pid", 0, "pid of a local server to sample for CPU and peak RSS")
	fs.IntVar(&t.Window, "grpc-window", 0, "client HTTP/2 stream window in bytes (0: grpc-go's dynamic default)")
	return &benchFlags{g: g, t: t, env: env}
}

// cleanupFlag registers --cleanup (workloads that create tables).
func cleanupFlag(fs *flag.FlagSet, t *bench.Target) {
	fs.BoolVar(&t.Cleanup, "cleanup", false, "drop the table at the end when the run created it (benchmark tables otherwise stay in the data dir)")
}

// resolve fills in the target from the flags and checks that both the
// gRPC endpoint and the REST API answer.
func (b *benchFlags) resolve(ctx context.Context) error {
	plaintext, err := b.g.resolve()
	if err != nil {
		return err
	}
	b.t.Endpoint, b.t.Insecure, b.t.Project = b.g.endpoint, plaintext, b.g.project
	if strings.ContainsAny(b.t.Table, ".:") {
		r, err := parseRef(b.t.Table, b.g.project)
		if err != nil {
			return err
		}
		if r.table == "" {
			return usagef("--table %q: want a table or [project:]dataset.table", b.t.Table)
		}
		b.t.Project, b.t.Dataset, b.t.Table = r.project, r.dataset, r.table
	}
	if b.t.ServerPID > 0 {
		if err := bench.CheckServerPID(b.t.ServerPID); err != nil {
			fmt.Fprintf(b.env.Stderr, "bqstore bench: warning: %v; the server's CPU and memory are not reported\n", err)
			b.t.ServerPID = 0
		}
	}
	if err := checkAPI(ctx, b.t.API); err != nil {
		return err
	}
	return checkEndpoint(ctx, b.t.Endpoint, plaintext)
}

func runBenchWrite(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "bench write", "[flags]")
	var cfg bench.WriteConfig
	tf := targetFlags(fs, env, &cfg.Target)
	fs.Int64Var(&cfg.Rows, "rows", 100000, "rows to write")
	fs.IntVar(&cfg.RowBytes, "row-bytes", 1200, "serialized bytes per row")
	fs.IntVar(&cfg.RequestBytes, "request-bytes", 1<<20, "bytes per AppendRows request")
	fs.IntVar(&cfg.Streams, "streams", 1, "concurrent write streams")
	fs.StringVar(&cfg.Mode, "mode", "default", "stream type: default, committed, pending, buffered")
	cleanupFlag(fs, &cfg.Target)
	fs.BoolVar(&cfg.Verify, "verify", true, "read the table back through the Read API and check every row is there once")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := tf.resolve(ctx); err != nil {
		return err
	}
	res, err := bench.Write(ctx, cfg)
	if res != nil {
		_ = res.Print(env.Stdout, *asJSON)
	}
	return credentialsHint(err, cfg.Endpoint)
}

func runBenchRead(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "bench read", "[flags]")
	var cfg bench.ReadConfig
	tf := targetFlags(fs, env, &cfg.Target)
	fs.IntVar(&cfg.Streams, "streams", 1, "max_stream_count (0: the server chooses)")
	fs.StringVar(&cfg.Format, "format", "arrow", "arrow or avro")
	columns := fs.String("columns", "", "comma-separated selected fields (default all)")
	fs.StringVar(&cfg.Where, "where", "", "row_restriction")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := tf.resolve(ctx); err != nil {
		return err
	}
	if *columns != "" {
		cfg.Columns = strings.Split(*columns, ",")
	}
	res, err := bench.Read(ctx, cfg)
	if res != nil {
		_ = res.Print(env.Stdout, *asJSON)
	}
	return credentialsHint(err, cfg.Endpoint)
}

func runBenchQuery(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "bench query", "[flags]")
	var cfg bench.QueryConfig
	tf := targetFlags(fs, env, &cfg.Target)
	fs.Int64Var(&cfg.Rows, "rows", 0, "write a new table of this many rows first (0: query --table, default the dataset's newest table)")
	fs.IntVar(&cfg.RowBytes, "row-bytes", 100, "serialized bytes per row of the table written with --rows")
	cleanupFlag(fs, &cfg.Target)
	only := fs.String("only", "", "comma-separated queries to run (agg, filter, groupby, join, orderby, window, distinct; default all)")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := tf.resolve(ctx); err != nil {
		return err
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	res, err := bench.Query(ctx, cfg)
	if res != nil {
		_ = res.Print(env.Stdout, *asJSON)
	}
	return credentialsHint(err, cfg.Endpoint)
}

func runBenchIngest(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "bench ingest", "[flags]")
	var cfg bench.IngestConfig
	tf := targetFlags(fs, env, &cfg.Target)
	fs.IntVar(&cfg.Rate, "rate", 10000, "events produced per second into the in-process Kafka (kfake)")
	fs.IntVar(&cfg.RowBytes, "row-bytes", 1200, "bytes of one JSON event")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long the producer runs")
	fs.IntVar(&cfg.Partitions, "partitions", 4, "topic partitions")
	cleanupFlag(fs, &cfg.Target)
	memory := fs.String("memory-budget", "", "pipeline memory budget, e.g. 256MiB (default: the pipeline's)")
	fs.DurationVar(&cfg.BatchAge, "batch-age", 0, "pipeline batch age bound (default: the pipeline's, 1s)")
	fs.IntVar(&cfg.Conns, "conns", 0, "gRPC connections (default 4)")
	fs.DurationVar(&cfg.Drain, "drain", 2*time.Minute, "how long to wait after the load for the pipeline to commit everything")
	fs.BoolVar(&cfg.Verify, "verify", true, "read the table back through the Read API and check every event is there once")
	fs.BoolVar(&cfg.External, "external", false, "run no pipeline: print the kafka:// source on stderr for another process (bqstore ingest) and measure it through the group's committed offsets")
	fs.IntVar(&cfg.KafkaPort, "kafka-port", 0, "the in-process Kafka's port on 127.0.0.1 (default: ephemeral)")
	fs.IntVar(&cfg.PipelinePID, "pipeline-pid", 0, "pid of an external pipeline to sample for CPU and peak RSS")
	pipelineCmd := fs.String("pipeline-cmd", "", "with --external: a command the bench starts as the pipeline, {source}, {endpoint} and {table} replaced (e.g. \""+benchPipelineExample+"\")")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	cfg.Announce = env.Stderr
	cfg.PipelineCmd = strings.Fields(*pipelineCmd)
	if len(cfg.PipelineCmd) > 0 && !cfg.External {
		return usagef("--pipeline-cmd needs --external")
	}
	if *memory != "" {
		n, err := parseBytes(*memory)
		if err != nil {
			return usagef("--memory-budget: %v", err)
		}
		cfg.MemoryBudget = n
	}
	if err := tf.resolve(ctx); err != nil {
		return err
	}
	res, err := bench.Ingest(ctx, cfg)
	if res != nil {
		_ = res.Print(env.Stdout, *asJSON)
	}
	return credentialsHint(err, cfg.Endpoint)
}
