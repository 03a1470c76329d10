package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/faults"
	"github.com/bqstore/bqstore/internal/readapi"
	"github.com/bqstore/bqstore/internal/server"
)

// shutdownGrace is how long serve lets in-flight requests finish after
// SIGINT/SIGTERM before cutting them.
const shutdownGrace = 30 * time.Second

func runServe(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "serve", "[flags]")
	var cfg server.Config
	fs.StringVar(&cfg.DataDir, "data-dir", envDefault(env, "BQSTORE_DATA_DIR", server.DefaultDataDir), "directory for all durable state, created if missing (env BQSTORE_DATA_DIR)")
	fs.StringVar(&cfg.GRPCAddr, "grpc-addr", envDefault(env, "BQSTORE_GRPC_ADDR", server.DefaultGRPCAddr), "gRPC listen address for the Storage API; port 0 picks one (env BQSTORE_GRPC_ADDR)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", envDefault(env, "BQSTORE_HTTP_ADDR", server.DefaultHTTPAddr), "HTTP listen address for REST v2, /healthz and /metrics; port 0 picks one (env BQSTORE_HTTP_ADDR)")
	fs.StringVar(&cfg.AdminAddr, "admin-addr", envDefault(env, "BQSTORE_ADMIN_ADDR", server.DefaultAdminAddr), "HTTP listen address for /admin/faults, /debug/pprof, /metrics and /healthz; keep it on loopback; empty: none (env BQSTORE_ADMIN_ADDR)")
	allowedHosts := fs.String("allowed-hosts", envDefault(env, "BQSTORE_ALLOWED_HOSTS", ""), "comma-separated host names the HTTP ports answer to besides IP addresses and localhost, such as bqstore for a container name; * for any (env BQSTORE_ALLOWED_HOSTS)")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert", envDefault(env, "BQSTORE_TLS_CERT", ""), "PEM certificate file: serve the gRPC and HTTP ports over TLS (with --tls-key); the admin port stays plaintext (env BQSTORE_TLS_CERT)")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key", envDefault(env, "BQSTORE_TLS_KEY", ""), "PEM private key file of --tls-cert (env BQSTORE_TLS_KEY)")
	fs.StringVar(&cfg.AuthTokensFile, "auth-tokens", envDefault(env, "BQSTORE_AUTH_TOKENS", ""), "file of bearer tokens, one per line: TOKEN PRINCIPAL PROJECT[,PROJECT...] (* for all); with it, requests without a listed token are UNAUTHENTICATED/401 and other projects PERMISSION_DENIED/403; off by default (env BQSTORE_AUTH_TOKENS)")
	fs.StringVar(&cfg.Project, "project", envDefault(env, "BQSTORE_PROJECT", server.DefaultProject), "a project that exists from the start (env BQSTORE_PROJECT)")
	memLimit := fs.String("memory-limit", envDefault(env, "BQSTORE_MEMORY_LIMIT", "448MiB"), "soft limit of the Go heap (runtime/debug.SetMemoryLimit): the GC works harder near it, nothing fails above it; 0 turns it off; GOMEMLIMIT, when set, wins (env BQSTORE_MEMORY_LIMIT)")
	inflight := fs.String("max-inflight-bytes", envDefault(env, "BQSTORE_MAX_INFLIGHT_BYTES", "64MiB"), "byte budget of appends received but not yet durable; at the budget, AppendRows stops reading and gRPC flow control pushes back on clients (env BQSTORE_MAX_INFLIGHT_BYTES)")
	grpcConns := fs.String("max-grpc-conns", envDefault(env, "BQSTORE_MAX_GRPC_CONNS", strconv.Itoa(server.DefaultGRPCMaxConns)), "max open gRPC connections; more are closed at once (clients see UNAVAILABLE and retry); each holds about 2 MiB of buffers (env BQSTORE_MAX_GRPC_CONNS)")
	httpConns := fs.String("max-http-conns", envDefault(env, "BQSTORE_MAX_HTTP_CONNS", strconv.Itoa(server.DefaultHTTPMaxConns)), "max open HTTP (REST) connections; more are answered 503 and closed (env BQSTORE_MAX_HTTP_CONNS)")
	grpcStreams := fs.String("max-grpc-streams", envDefault(env, "BQSTORE_MAX_GRPC_STREAMS", strconv.Itoa(server.DefaultGRPCMaxStreams)), "max concurrent streams (RPCs) per gRPC connection, as the real service's 100; clients queue more until one ends; each can push a 1 MiB window ahead of its handler (env BQSTORE_MAX_GRPC_STREAMS)")
	openStreams := fs.String("max-open-streams", envDefault(env, "BQSTORE_MAX_OPEN_STREAMS", strconv.Itoa(server.DefaultMaxOpenStreams)), "max gRPC streams (RPCs) open at once across all connections; more are refused (RST_STREAM REFUSED_STREAM: clients retry once, then see UNAVAILABLE); bounds the 1 MiB windows clients can push ahead of the handlers to this many MiB (env BQSTORE_MAX_OPEN_STREAMS)")
	fs.DurationVar(&cfg.ReceiveGrace, "receive-grace", server.DefaultReceiveGrace, "a gRPC message over 1 MiB admitted by the receive budget must arrive within this plus its size at --receive-min-rate once its client may send it; past that its stream is reset (CANCELLED) and its budget freed")
	recvRate := fs.String("receive-min-rate", "1MiB", "the slowest rate, per second, at which an admitted gRPC message may arrive (see --receive-grace)")
	recvBytes := fs.String("max-receive-bytes", envDefault(env, "BQSTORE_MAX_RECEIVE_BYTES", "96MiB"), "budget of gRPC messages over 1 MiB being received and decoded at once, at 3x their size; a message waits for it with its stream's flow-control window closed, before its bytes are let in (env BQSTORE_MAX_RECEIVE_BYTES)")
	diskBytes := fs.String("max-disk-bytes", envDefault(env, "BQSTORE_MAX_DISK_BYTES", "0"), "size limit of the data directory for appends: one that would pass it is refused RESOURCE_EXHAUSTED, nothing of it stored; 0: no limit (env BQSTORE_MAX_DISK_BYTES)")
	logFormat := fs.String("log-format", envDefault(env, "BQSTORE_LOG_FORMAT", "text"), "log format: text or json (env BQSTORE_LOG_FORMAT)")
	logLevel := fs.String("log-level", envDefault(env, "BQSTORE_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env BQSTORE_LOG_LEVEL)")
	faultSpec := fs.String("faults", envDefault(env, "BQSTORE_FAULTS", ""), "faults to inject into the Storage API, text or JSON, or @file (docs/faults.md; env BQSTORE_FAULTS); change them at run time with PUT /admin/faults on --admin-addr")
	fs.Int64Var(&cfg.FaultSeed, "fault-seed", 1, "seed of the fault triggers: the same seed and the same calls give the same faults")
	fs.IntVar(&cfg.Quota.MaxActiveStreams, "quota-active-streams", 0, "max concurrent active application-created write streams per project (the real default is 2000); 0: no limit")
	fs.Float64Var(&cfg.Quota.CreateStreamRate, "quota-create-stream-rate", 0, "CreateWriteStream calls per second per project (the real service slows sharply above 40-50); 0: no limit")
	fs.IntVar(&cfg.Quota.CreateStreamBurst, "quota-create-stream-burst", 0, "burst of --quota-create-stream-rate (default: one second's worth)")
	createMode := fs.String("quota-create-stream-mode", "reject", "over --quota-create-stream-rate: reject (RESOURCE_EXHAUSTED) or delay (wait for a turn, as the real service slows down)")
	connTput := fs.String("quota-conn-throughput", "", "AppendRows bytes per second per connection, such as 10MB; empty: no limit")
	projTput := fs.String("quota-project-throughput", "", "AppendRows bytes per second per project, such as 300MB (the real regional default); empty: no limit")
	maxSessions := fs.String("max-read-sessions", envDefault(env, "BQSTORE_MAX_READ_SESSIONS", strconv.Itoa(readapi.DefaultMaxSessionsPerProject)), "max live Read API sessions per project; CreateReadSession past it is RESOURCE_EXHAUSTED until sessions expire (6 h) (env BQSTORE_MAX_READ_SESSIONS)")
	sessMem := fs.String("read-session-memory", envDefault(env, "BQSTORE_READ_SESSION_MEMORY", "256MiB"), "memory bound of open Read API sessions (pinned snapshot plans, compiled row_restriction filters); idle sessions are closed to make room, and reopened when read (env BQSTORE_READ_SESSION_MEMORY)")
	queryMem := fs.String("max-query-memory", envDefault(env, "BQSTORE_MAX_QUERY_MEMORY", "256MiB"), "memory one query may hold in its operators (result rows, GROUP BY groups, a join's build side); a query that needs more fails with resourcesExceeded, the server and other queries go on; up to 4 queries run at once (env BQSTORE_MAX_QUERY_MEMORY)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if cfg.Read.MaxSessionMemory, err = parseBytes(*sessMem); err != nil || cfg.Read.MaxSessionMemory <= 0 {
		return usagef("--read-session-memory: %q is not a positive size (for example 256MiB)", *sessMem)
	}
	if cfg.MaxQueryMemory, err = parseBytes(*queryMem); err != nil || cfg.MaxQueryMemory <= 0 {
		return usagef("--max-query-memory: %q is not a positive size (for example 256MiB)", *queryMem)
	}
	if cfg.Read.MaxSessionsPerProject, err = strconv.Atoi(*maxSessions); err != nil || cfg.Read.MaxSessionsPerProject <= 0 {
		return usagef("--max-read-sessions: %q is not a positive number", *maxSessions)
	}
	if cfg.GRPCMaxConns, err = strconv.Atoi(*grpcConns); err != nil || cfg.GRPCMaxConns <= 0 {
		return usagef("--max-grpc-conns: %q is not a positive number", *grpcConns)
	}
	if cfg.HTTPMaxConns, err = strconv.Atoi(*httpConns); err != nil || cfg.HTTPMaxConns <= 0 {
		return usagef("--max-http-conns: %q is not a positive number", *httpConns)
	}
	if cfg.GRPCMaxStreams, err = strconv.Atoi(*grpcStreams); err != nil || cfg.GRPCMaxStreams <= 0 {
		return usagef("--max-grpc-streams: %q is not a positive number", *grpcStreams)
	}
	if cfg.MaxOpenStreams, err = strconv.Atoi(*openStreams); err != nil || cfg.MaxOpenStreams <= 0 {
		return usagef("--max-open-streams: %q is not a positive number", *openStreams)
	}
	if cfg.ReceiveMinRate, err = parseBytes(*recvRate); err != nil || cfg.ReceiveMinRate <= 0 {
		return usagef("--receive-min-rate: %q is not a positive size (for example 1MiB)", *recvRate)
	}
	if cfg.ReceiveGrace <= 0 {
		return usagef("--receive-grace: %v is not a positive duration", cfg.ReceiveGrace)
	}
	if cfg.MaxReceiveBytes, err = parseBytes(*recvBytes); err != nil || cfg.MaxReceiveBytes <= 0 {
		return usagef("--max-receive-bytes: %q is not a positive size (for example 96MiB)", *recvBytes)
	}
	if *diskBytes != "0" {
		if cfg.MaxDiskBytes, err = parseBytes(*diskBytes); err != nil || cfg.MaxDiskBytes < 0 {
			return usagef("--max-disk-bytes: %q is not a size (for example 20GiB, or 0 for no limit)", *diskBytes)
		}
	}
	if cfg.Storage.MaxInflightBytes, err = parseBytes(*inflight); err != nil || cfg.Storage.MaxInflightBytes <= 0 {
		return usagef("--max-inflight-bytes: %q is not a positive size (for example 256MiB)", *inflight)
	}
	var limit int64
	if *memLimit != "0" && *memLimit != "off" {
		limit, err = parseBytes(*memLimit)
	}
	if err != nil {
		return usagef("--memory-limit: %q is not a size (for example 448MiB, or 0 for none)", *memLimit)
	}
	if _, set := env.LookupEnv("GOMEMLIMIT"); !set && limit > 0 {
		// Measured: with 16 concurrent 1 MB writers, peak RSS 531 MB
		// without it, 399 MB with 448 MiB, at the same throughput
		// (docs/PERFORMANCE.md).
		debug.SetMemoryLimit(limit)
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	for _, h := range strings.Split(*allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			cfg.AllowedHosts = append(cfg.AllowedHosts, h)
		}
	}
	flagSeed := cfg.FaultSeed
	if err := serveFaultsAndQuotas(&cfg, *faultSpec, *createMode, *connTput, *projTput); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "fault-seed" {
			cfg.FaultSeed = flagSeed // given: wins over a --faults document's seed
		}
	})
	logger, err := newLogger(env, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger

	srv, err := server.Start(cfg)
	if err != nil {
		return err
	}
	// server.Start logged the listening addresses and the data dir.
	<-ctx.Done()
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Close(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// serveFaultsAndQuotas fills in cfg's faults and quotas from the flags.
func serveFaultsAndQuotas(cfg *server.Config, spec, createMode, connTput, projTput string) error {
	if file, ok := strings.CutPrefix(spec, "@"); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return usagef("--faults: %v", err)
		}
		spec = string(b)
	}
	// The JSON docs/faults.md shows and GET /admin/faults returns, with
	// its seed (which --fault-seed, when given, overrides: the caller
	// sets it after).
	s, seed, err := faults.ParseDocument(spec)
	if err != nil {
		return usagef("--faults: %v", err)
	}
	cfg.Faults = s
	if seed != nil {
		cfg.FaultSeed = *seed
	}
	switch createMode {
	case "reject":
	case "delay":
		cfg.Quota.CreateStreamDelay = true
	default:
		return usagef("--quota-create-stream-mode: %q is not reject or delay", createMode)
	}
	if cfg.Quota.MaxActiveStreams < 0 || cfg.Quota.CreateStreamRate < 0 || cfg.Quota.CreateStreamBurst < 0 {
		return usagef("--quota-active-streams, --quota-create-stream-rate and --quota-create-stream-burst must not be negative")
	}
	for _, f := range []struct {
		name, v string
		dst     *int64
	}{{"--quota-conn-throughput", connTput, &cfg.Quota.ConnBytesPerSec}, {"--quota-project-throughput", projTput, &cfg.Quota.ProjectBytesPerSec}} {
		if f.v == "" {
			continue
		}
		n, err := parseBytes(f.v)
		if err != nil {
			return usagef("%s: %v", f.name, err)
		}
		*f.dst = n
	}
	return nil
}

func newLogger(env *Env, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level: unknown level %q (debug, info, warn, error)", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(env.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(env.Stderr, opts)), nil
	}
	return nil, usagef("--log-format: unknown format %q (text, json)", format)
}
