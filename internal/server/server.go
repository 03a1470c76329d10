// Package server wires bqstore together: it opens the data directory, starts
// the gRPC server (Storage API v1 and health), the HTTP server (REST v2,
// /healthz, /metrics) and the admin HTTP server (/admin/faults,
// /debug/pprof), and stops them gracefully.
//
// Goroutine lifetimes: Start starts one goroutine per listener (gRPC Serve,
// HTTP Serve and, when configured, admin Serve). Close stops accepting, waits for in-flight requests,
// closes the storage and waits for both goroutines before it returns.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"

	"github.com/bqstore/bqstore/internal/apierr"
	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/faults"
	"github.com/bqstore/bqstore/internal/jobs"
	"github.com/bqstore/bqstore/internal/quota"
	"github.com/bqstore/bqstore/internal/readapi"
	"github.com/bqstore/bqstore/internal/recvbudget"
	"github.com/bqstore/bqstore/internal/resource"
	"github.com/bqstore/bqstore/internal/rest"
	"github.com/bqstore/bqstore/internal/storage"
	"github.com/bqstore/bqstore/internal/writeapi"
)

// Config is the server's configuration. The zero value of a field means its
// default.
type Config struct {
	// DataDir holds all durable state. Created if missing.
	DataDir string
	// GRPCAddr and HTTPAddr are the listen addresses; port 0 picks a free
	// port (see Server.GRPCAddr and Server.HTTPAddr).
	GRPCAddr string
	HTTPAddr string
	// AdminAddr is the listen address of /admin/faults, /debug/pprof,
	// /metrics and /healthz for operators (the CLI's default is
	// DefaultAdminAddr, loopback only); empty: no admin listener.
	AdminAddr string
	// AllowedHosts are host names, besides IP addresses and localhost,
	// that requests to the HTTP ports may name in their Host header ("*":
	// any). Others are refused, against DNS rebinding.
	AllowedHosts []string
	// HTTPMaxConns bounds the HTTP port's open connections (default
	// DefaultHTTPMaxConns); HTTPReadTimeout, HTTPWriteTimeout and
	// HTTPIdleTimeout bound a request's reading, its response's writing
	// and an idle keep-alive connection (defaults DefaultHTTP*).
	HTTPMaxConns int
	// GRPCMaxConns bounds the gRPC port's open connections (default
	// DefaultGRPCMaxConns); more are closed at once.
	GRPCMaxConns int
	// GRPCMaxStreams bounds the concurrent streams (RPCs) of one gRPC
	// connection (default DefaultGRPCMaxStreams): clients queue the
	// others until one ends (SETTINGS_MAX_CONCURRENT_STREAMS).
	GRPCMaxStreams int
	// MaxOpenStreams bounds the gRPC streams open at once across all
	// connections (default DefaultMaxOpenStreams): a stream opened beyond
	// it is refused with RST_STREAM REFUSED_STREAM (recvbudget).
	MaxOpenStreams int
	// ReceiveGrace and ReceiveMinRate bound how long a message admitted
	// by the receive budget may take to arrive once its client may send
	// all of it: ReceiveGrace plus its length at ReceiveMinRate bytes per
	// second (defaults recvbudget.DefaultGrace, DefaultMinRate); past that
	// its stream is reset (the client sees CANCELLED) and its admission
	// returned, so a client that stalls cannot hold the budget.
	ReceiveGrace   time.Duration
	ReceiveMinRate int64
	// MaxReceiveBytes bounds the gRPC messages larger than the stream
	// window (1 MiB) being received and decoded at once, at 3x their
	// length (default DefaultMaxReceiveBytes; recvbudget).
	MaxReceiveBytes int64
	// MaxDiskBytes bounds the data directory's size for appends: one that
	// would take it past the limit is refused RESOURCE_EXHAUSTED, nothing
	// of it stored (diskquota.go). Zero: no limit.
	MaxDiskBytes int64
	// MaxQueryMemory bounds the memory one query's operators hold (rows,
	// groups, a join's build side); beyond it the query fails with
	// resourcesExceeded. 0: sql.DefaultMaxMemory.
	MaxQueryMemory int64
	// TLSCertFile and TLSKeyFile (PEM), when both are set, serve the gRPC
	// and HTTP ports over TLS (the admin port stays plaintext on
	// loopback). Off by default, for local use.
	TLSCertFile string
	TLSKeyFile  string
	// AuthTokensFile, when set, maps bearer tokens to principals and the
	// projects they may use (format in auth.go: TOKEN PRINCIPAL
	// PROJECT[,PROJECT...], * for all). A missing or unknown token is
	// UNAUTHENTICATED / 401, another project PERMISSION_DENIED / 403, on
	// both ports (gRPC health and /healthz excepted). Off by default.
	AuthTokensFile   string
	HTTPReadTimeout  time.Duration
	HTTPWriteTimeout time.Duration
	HTTPIdleTimeout  time.Duration
	// Project is a project that exists from the start.
	Project string
	// Logger receives the server's structured log. Default: discard.
	Logger *slog.Logger
	// Storage tunes the engine (zero: defaults). FS, Clock and Logger are
	// filled in by the server when unset.
	Storage storage.Options
	// Read tunes the Read API (zero: defaults; session TTL 6 h). Logger
	// and Registerer are the server's.
	Read readapi.Options
	// Faults are injected into the Storage API from the start, with
	// FaultSeed seeding their triggers (docs/faults.md). They can be read
	// and replaced at run time on GET/PUT /admin/faults (admin port).
	Faults    faults.Spec
	FaultSeed int64
	// Quota are the Storage Write API quotas; the zero value turns them
	// all off.
	Quota quota.Limits
	// CompactInterval is how often tables are offered a compaction
	// (default DefaultCompactInterval; negative: never).
	CompactInterval time.Duration
}

// Defaults for Config.
const (
	DefaultDataDir  = "./bqstore-data"
	DefaultGRPCAddr = "127.0.0.1:9060"
	DefaultHTTPAddr = "127.0.0.1:9050"
	// DefaultAdminAddr is the CLI's default admin address (loopback only).
	DefaultAdminAddr = "127.0.0.1:9070"
	DefaultProject   = "local"

	// MaxRecvMsgSize admits the Storage API's 10 MB AppendRows requests
	// plus the largest request the clients send to test the limit (11 MB),
	// so that we can answer INVALID_ARGUMENT ourselves instead of letting
	// grpc-go reset the stream with RESOURCE_EXHAUSTED. grpc-go refuses a
	// larger message from its length prefix, before buffering it; one it
	// admits is buffered whole before the handler sees it, so this is
	// also the most a connection holds outside the in-flight budget
	// (docs/memory.md): at 64 MiB, 40 concurrent 60 MB requests reached
	// 4.5 GB RSS.
	MaxRecvMsgSize = 16 << 20
	// DefaultGRPCMaxStreams is what Google's front end advertises to the
	// Storage API's clients (SETTINGS_MAX_CONCURRENT_STREAMS 100: the
	// Node client's 101st AppendRows connection on one channel waits,
	// googleapis/nodejs-bigquery-storage#423); managedwriter spreads its
	// streams over a pool of up to 4 connections. With the 1 MiB stream
	// window it bounds what one connection's clients can push ahead of
	// their handlers to 100 MiB.
	DefaultGRPCMaxStreams = 100
	// DefaultMaxOpenStreams bounds the streams open at once across all
	// gRPC connections: each lets its client push a 1 MiB window ahead
	// of its handler, outside the receive budget, so that the windows
	// hold at most 1 GiB whatever the number of connections (256 x 100
	// streams would be 25 GiB). Honest loads stay far below: an ingest
	// process holds one AppendRows stream per partition on at most 4
	// connections of 100 streams (400), managedwriter one per writer, the
	// Node client at most 100 a channel. Beyond it a new stream is refused
	// (RST_STREAM REFUSED_STREAM), which grpc-go and grpc-js retry once
	// transparently and then report UNAVAILABLE.
	DefaultMaxOpenStreams = 1024
	// DefaultReceiveGrace is recvbudget.DefaultGrace (Config.ReceiveGrace).
	DefaultReceiveGrace = recvbudget.DefaultGrace
	// streamWindow is the gRPC stream flow-control window
	// (grpc.InitialWindowSize), the receive budget's threshold.
	streamWindow = recvbudget.Threshold
	// DefaultMaxReceiveBytes admits two of the largest messages
	// (16 MiB, at 3x) being received at once, and many smaller ones.
	DefaultMaxReceiveBytes = 96 << 20
	// MaxSendMsgSize is the Read API's documented response limit.
	MaxSendMsgSize = 128 << 20
)

func (c *Config) setDefaults() {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.GRPCAddr == "" {
		c.GRPCAddr = DefaultGRPCAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.Project == "" {
		c.Project = DefaultProject
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.HTTPMaxConns = cmp.Or(c.HTTPMaxConns, DefaultHTTPMaxConns)
	c.GRPCMaxConns = cmp.Or(c.GRPCMaxConns, DefaultGRPCMaxConns)
	c.GRPCMaxStreams = cmp.Or(c.GRPCMaxStreams, DefaultGRPCMaxStreams)
	c.MaxOpenStreams = cmp.Or(c.MaxOpenStreams, DefaultMaxOpenStreams)
	c.MaxReceiveBytes = cmp.Or(c.MaxReceiveBytes, DefaultMaxReceiveBytes)
	c.HTTPReadTimeout = cmp.Or(c.HTTPReadTimeout, DefaultHTTPReadTimeout)
	c.HTTPWriteTimeout = cmp.Or(c.HTTPWriteTimeout, DefaultHTTPWriteTimeout)
	c.HTTPIdleTimeout = cmp.Or(c.HTTPIdleTimeout, DefaultHTTPIdleTimeout)
}

// tlsConfig loads the certificate of TLSCertFile and TLSKeyFile (nil, nil
// when TLS is off).
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.TLSCertFile == "" && c.TLSKeyFile == "" {
		return nil, nil
	}
	if c.TLSCertFile == "" || c.TLSKeyFile == "" {
		return nil, errors.New("server: TLS needs both a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("server: TLS: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Server is a running bqstore server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	registry *prometheus.Registry

	lock    *os.File // flock on <data-dir>/LOCK: one server per data dir
	recv    *recvbudget.Gate
	bufs    *recvbudget.Pool
	db      *storage.DB
	cat     *catalog.Catalog
	backend *backend
	read    *readapi.Service
	write   *writeapi.Service
	busy    atomic.Int64 // calls in flight other than AppendRows
	// httpBusy counts HTTP requests in flight on the public and admin
	// ports, so Close can cut connections that carry none (shutdownHTTP).
	httpBusy atomic.Int64
	// compactor compacts tables in the background (nil: disabled).
	compactor *compactor
	faults    *faults.Injector
	quota     *quota.Limiter

	grpcLis  net.Listener
	httpLis  net.Listener
	adminLis net.Listener // nil: no admin port
	grpcSrv  *grpc.Server
	httpSrv  *http.Server
	adminSrv *http.Server
	rest     *rest.Handler
	jobs     *jobs.Store
	health   *health.Server
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	closed   bool
	closeErr error
}

// Start opens the data directory, listens on both addresses and serves
// until Close.
func Start(cfg Config) (_ *Server, err error) {
	cfg.setDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger, registry: prometheus.NewRegistry()}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("server: data dir: %w", err)
	}
	defer func() {
		if err != nil {
			s.closeResources()
		}
	}()
	if err := s.openData(); err != nil {
		return nil, err
	}

	s.grpcLis, err = net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return nil, fmt.Errorf("server: grpc listen: %w", err)
	}
	s.grpcLis = &limitListener{Listener: s.grpcLis, max: cfg.GRPCMaxConns}
	// Large messages are admitted by the receive budget before their
	// bytes are let in (recvbudget): below TLS when TLS is on, else on
	// every accepted connection.
	s.recv = recvbudget.NewWithOptions(cfg.MaxReceiveBytes, MaxRecvMsgSize, recvbudget.Options{
		InitialWindow: streamWindow, Grace: cfg.ReceiveGrace, MinRate: cfg.ReceiveMinRate,
		MaxStreams: int64(cfg.MaxOpenStreams)})
	s.bufs = recvbudget.NewPool()
	s.httpLis, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("server: http listen: %w", err)
	}
	// Under TLS, the limit's plaintext 503 reaches the client as a failed
	// handshake: the connection is refused either way.
	s.httpLis = &limitListener{Listener: s.httpLis, max: cfg.HTTPMaxConns, refuse: refuseHTTP}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	var auth *tokens
	if cfg.AuthTokensFile != "" {
		if auth, err = loadTokens(cfg.AuthTokensFile); err != nil {
			return nil, err
		}
	}
	if cfg.AdminAddr != "" {
		s.adminLis, err = net.Listen("tcp", cfg.AdminAddr)
		if err != nil {
			return nil, fmt.Errorf("server: admin listen: %w", err)
		}
	}

	// Faults and quotas are interceptors in front of the services: the
	// fault injector first (it sees what the client sent and what it will
	// receive), then the quotas.
	s.faults = faults.New(faults.Options{Logger: s.log, Registerer: s.registry, StreamTypes: streamTypes{s.backend}})
	if err := s.faults.Set(cfg.Faults, cfg.FaultSeed); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.quota = quota.New(cfg.Quota, quota.Options{Registerer: s.registry, Count: s.activeStreams})
	// A request that does not decode is INVALID_ARGUMENT, not grpc-go's
	// INTERNAL (apierr.DecodeGuard).
	guard := apierr.NewDecodeGuard()
	// Credentials are checked right after decoding, before anything else
	// looks at the request.
	unary := []grpc.UnaryServerInterceptor{guard.UnaryInterceptor}
	streams := []grpc.StreamServerInterceptor{guard.StreamInterceptor}
	if reqLogEnabled(s.log) {
		// Outermost: it sees the final code and the whole duration.
		unary = append([]grpc.UnaryServerInterceptor{logUnary(s.log)}, unary...)
		streams = append([]grpc.StreamServerInterceptor{logStream(s.log)}, streams...)
	}
	if auth != nil {
		unary = append(unary, auth.unary)
		streams = append(streams, auth.stream)
	}
	unary = append(unary, s.recoverUnary, s.faults.UnaryServerInterceptor(), s.quota.UnaryServerInterceptor())
	streams = append(streams, s.recoverStream, s.faults.StreamServerInterceptor(), s.quota.StreamServerInterceptor())
	var creds []grpc.ServerOption
	if tlsCfg != nil {
		creds = append(creds, grpc.Creds(s.recv.Creds(credentials.NewTLS(tlsCfg))))
	} else {
		s.grpcLis = s.recv.Listener(s.grpcLis)
	}
	s.grpcSrv = grpc.NewServer(append(creds,
		grpc.ForceServerCodecV2(guard.Codec()),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(streams...),
		grpc.MaxRecvMsgSize(MaxRecvMsgSize),
		// AppendRows returns a message's admission itself, once its rows
		// hold the engine's in-flight budget (writeapi).
		grpc.StatsHandler(s.recv.StatsHandler(storagepb.BigQueryWrite_AppendRows_FullMethodName)),
		experimental.BufferPool(s.bufs),
		grpc.MaxSendMsgSize(MaxSendMsgSize),
		// The receive windows bound what clients can push ahead of the
		// handlers, so they are part of the server's memory bound: with
		// 16 MiB windows, 16 concurrent 1 MB writers pushed peak RSS to
		// about 900 MB; with 1 MiB the same load stayed under 450 MB at
		// the same throughput (docs/PERFORMANCE.md). The engine's
		// in-flight budget provides the pipelining depth.
		// The receive budget admits only messages over this window
		// (recvbudget.Threshold), and closes the connection of a client
		// that sends more than it (streamWindow).
		grpc.InitialWindowSize(streamWindow),
		// Each stream lets its client push a window ahead of its
		// handler, outside the receive budget: the streams of a
		// connection are capped as the real service caps them.
		grpc.MaxConcurrentStreams(uint32(cfg.GRPCMaxStreams)),
		grpc.InitialConnWindowSize(16<<20),
		grpc.ReadBufferSize(1<<20),
		grpc.WriteBufferSize(1<<20),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)...)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpcSrv, s.health)
	wopts := writeapi.Options{Logger: s.log}
	if cfg.MaxDiskBytes > 0 {
		wopts.Admit = newDiskQuota(cfg.DataDir, cfg.MaxDiskBytes, s.db).check
	}
	s.write = writeapi.New(s.backend, s.db, writeapi.NewMetrics(s.registry), wopts)
	storagepb.RegisterBigQueryWriteServer(s.grpcSrv, s.write)
	ropts := cfg.Read
	ropts.Logger, ropts.Registerer = s.log, s.registry
	if ropts.Dir == "" {
		// Read sessions survive a restart (docs/format/readsession.md).
		ropts.Dir = filepath.Join(cfg.DataDir, "readsessions")
	}
	if s.read, err = readapi.New(readTables{s.backend}, s.db, ropts); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	storagepb.RegisterBigQueryReadServer(s.grpcSrv, s.read)
	s.registry.MustRegister(newStorageCollector(s.db))
	unknown := len(s.backend.unknown)
	s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bqstore_catalog_unknown_tables",
		Help: "Engine tables the catalog neither names nor deleted, found at start-up: kept and quarantined, not served (docs/format/catalog.md)."},
		func() float64 { return float64(unknown) }))
	s.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bqstore_grpc_receive_admitted_bytes",
			Help: "Cost (3x length) of the large gRPC messages admitted by the receive budget and not yet handled (--max-receive-bytes)."},
			func() float64 { return float64(s.recv.InUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bqstore_grpc_receive_waiting",
			Help: "Large gRPC messages waiting for the receive budget (their streams' windows held closed)."},
			func() float64 { return float64(s.recv.Waiting()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bqstore_grpc_receive_stalled_total",
			Help: "gRPC streams reset because a message admitted by the receive budget did not arrive in time (--receive-grace, --receive-min-rate)."},
			func() float64 { return float64(s.recv.Stalls()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bqstore_grpc_open_streams",
			Help: "gRPC streams open, across connections (--max-open-streams)."},
			func() float64 { return float64(s.recv.OpenStreams()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bqstore_grpc_streams_refused_total",
			Help: "gRPC streams refused (RST_STREAM REFUSED_STREAM) because --max-open-streams were open."},
			func() float64 { return float64(s.recv.RefusedStreams()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bqstore_grpc_flow_control_errors_total",
			Help: "gRPC connections closed because the client sent more than a stream's flow-control window (GOAWAY FLOW_CONTROL_ERROR)."},
			func() float64 { return float64(s.recv.Violations()) }),
	)
	if cfg.CompactInterval >= 0 {
		s.compactor = startCompactor(s.db, cmp.Or(cfg.CompactInterval, DefaultCompactInterval), s.log)
	}

	mux := http.NewServeMux()
	// Jobs and their results survive a restart (docs/format/jobs.md).
	s.jobs, err = jobs.Open(s.cat, jobs.Options{DB: s.db, Dir: filepath.Join(cfg.DataDir, "jobs"), Logger: s.log, MaxMemory: cfg.MaxQueryMemory})
	if err != nil {
		return nil, fmt.Errorf("server: open jobs: %w", err)
	}
	restOpts := rest.Options{Stats: s.tableStats, DB: s.db, Logger: s.log, Jobs: s.jobs}
	if admit := wopts.Admit; admit != nil {
		// tabledata.insertAll is refused as an AppendRows request is,
		// with REST's form of RESOURCE_EXHAUSTED: 403 quotaExceeded.
		restOpts.Admit = func() error {
			if err := admit(); err != nil {
				return &rest.Error{Code: http.StatusForbidden, Reason: "quotaExceeded", Status: "RESOURCE_EXHAUSTED",
					Msg: status.Convert(apierr.Err(err, "")).Message()}
			}
			return nil
		}
	}
	if auth != nil {
		restOpts.ProjectVisible = auth.visible
	}
	s.rest = rest.New(s.cat, restOpts)
	mux.Handle("/", s.rest)
	healthz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	metrics := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry})
	mux.Handle("GET /healthz", healthz)
	mux.Handle("GET /metrics", metrics)
	// /admin/faults and /debug/pprof are on the admin port only.
	var public http.Handler = mux
	if auth != nil {
		public = auth.httpAuth(mux, s.rest)
	}
	public = publicHandler(public, s.rest, cfg.AllowedHosts)
	if reqLogEnabled(s.log) {
		public = logHTTP(s.log, public)
	}
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	s.httpSrv = &http.Server{
		Handler:           s.countHTTP(public),
		ReadHeaderTimeout: 30 * time.Second,
		ReadTimeout:       cfg.HTTPReadTimeout,
		WriteTimeout:      cfg.HTTPWriteTimeout,
		IdleTimeout:       cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    1 << 20,
		TLSConfig:         tlsCfg,
		ErrorLog:          errLog,
	}
	if s.adminLis != nil {
		s.adminSrv = &http.Server{
			Handler:           s.countHTTP(s.adminHandler(metrics, healthz)),
			ReadHeaderTimeout: 30 * time.Second,
			ReadTimeout:       time.Minute,
			IdleTimeout:       cfg.HTTPIdleTimeout,
			ErrorLog:          errLog,
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.adminSrv.Serve(s.adminLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("admin serve", "err", err)
			}
		}()
	}

	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.grpcSrv.Serve(s.grpcLis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("grpc serve", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		serve := s.httpSrv.Serve
		if tlsCfg != nil {
			serve = func(l net.Listener) error { return s.httpSrv.ServeTLS(l, "", "") }
		}
		if err := serve(s.httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http serve", "err", err)
		}
	}()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	dataDir := cfg.DataDir
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	// The one line with the chosen addresses, for people, tests and
	// scripts (internal/testkit reads it).
	s.log.Info("listening",
		"grpc", s.GRPCAddr(), "http", s.HTTPAddr(), "admin", s.AdminAddr(), "data_dir", dataDir, "project", cfg.Project)
	return s, nil
}

// GRPCAddr is the address the gRPC server listens on (the chosen port when
// the configured port was 0).
func (s *Server) GRPCAddr() string { return s.grpcLis.Addr().String() }

// HTTPAddr is the address the HTTP server listens on.
func (s *Server) HTTPAddr() string { return s.httpLis.Addr().String() }

// AdminAddr is the address of the admin port ("" when there is none).
func (s *Server) AdminAddr() string {
	if s.adminLis == nil {
		return ""
	}
	return s.adminLis.Addr().String()
}

// ReceiveBudget reports the receive budget (recvbudget): its size, its
// high-water mark, and the high-water mark of the gRPC transport's
// buffers (frames received and not yet decoded, temporary buffers).
func (s *Server) ReceiveBudget() (max, high, buffersHigh int64) {
	return s.recv.Max(), s.recv.HighWater(), s.bufs.HighWater()
}

// Registry is the server's Prometheus registry, served on /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// Faults is the server's fault injector (also served on the admin port's
// /admin/faults).
func (s *Server) Faults() *faults.Injector { return s.faults }

// activeStreams counts project p's open, unexpired application-created
// write streams in the engine (the active-streams quota).
func (s *Server) activeStreams(p string) int {
	n := 0
	for _, ct := range s.cat.Tables() {
		if ct.ProjectID != p {
			continue
		}
		tbl, err := s.db.Table(ct.ID)
		if err != nil {
			continue
		}
		for _, c := range tbl.ActiveStreams() {
			n += c
		}
	}
	return n
}

// streamTypes resolves write stream types for fault scopes.
type streamTypes struct{ b *backend }

func (st streamTypes) WriteStreamType(ctx context.Context, ws resource.WriteStream) (string, error) {
	if ws.IsDefault() {
		return "_default", nil
	}
	ct, err := st.b.lookup(ws.Project, ws.Dataset, ws.Table.Table)
	if err != nil {
		return "", err
	}
	tbl, err := st.b.db.Table(ct.ID)
	if err != nil {
		return "", err
	}
	info, err := tbl.Stream(ws.ID)
	if err != nil {
		return "", err
	}
	return info.Type.String(), nil
}

// Close stops accepting connections, lets in-flight requests finish (up to
// ctx's deadline, after which they are cut), syncs and closes the storage,
// and waits for the server's goroutines.
func (s *Server) Close(ctx context.Context) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	s.health.Shutdown()

	// AppendRows connections are long-lived: clients keep them open. Stop
	// taking their requests (new ones are answered UNAVAILABLE, in-band),
	// let GracefulStop refuse new calls and wait for the others, and once
	// every request received has been answered and no other call is in
	// flight, close what is left: nothing acknowledged is lost, and
	// clients reconnect to the restarted server.
	s.write.Drain()
	stopped := make(chan struct{})
	go func() {
		s.grpcSrv.GracefulStop()
		close(stopped)
	}()
	httpErr := s.shutdownHTTP(ctx)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-stopped:
			break wait
		case <-tick.C:
			if s.write.Idle() && s.busy.Load() == 0 {
				s.grpcSrv.Stop()
				<-stopped
				break wait
			}
		case <-ctx.Done():
			s.log.Warn("shutdown: cutting calls still in flight", "err", ctx.Err())
			s.grpcSrv.Stop()
			<-stopped
			break wait
		}
	}
	s.wg.Wait()
	s.closeErr = errors.Join(httpErr, s.closeResources())
	return s.closeErr
}

// openData locks the data directory and opens the engine and the catalog,
// then repairs whatever a crash left between them.
func (s *Server) openData() error {
	lock, err := os.OpenFile(filepath.Join(s.cfg.DataDir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("server: lock data dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return fmt.Errorf("server: data dir %s is in use by another bqstore process: %w", s.cfg.DataDir, err)
	}
	s.lock = lock

	sopts := s.cfg.Storage
	if sopts.Logger == nil {
		sopts.Logger = s.log
	}
	s.db, err = storage.Open(filepath.Join(s.cfg.DataDir, "tables"), &sopts)
	if err != nil {
		return fmt.Errorf("server: open storage: %w", err)
	}
	s.backend = &backend{db: s.db}
	// Without its CATALOG, reconcile would find every table unknown
	// (kept, but quarantined: none served): refuse to start instead,
	// naming what to restore.
	catName := filepath.Join(s.cfg.DataDir, catalog.FileName)
	if _, err := os.Stat(catName); errors.Is(err, os.ErrNotExist) {
		if n := len(s.db.TableIDs()) + len(s.db.Quarantined()); n > 0 {
			return missingCatalogError(s.cfg.DataDir, n)
		}
	} else if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.cat, err = catalog.Open(s.cfg.DataDir, catalog.Options{Observer: s.backend, StorageGone: s.backend.storageGone})
	if err != nil {
		return fmt.Errorf("server: open catalog: %w", err)
	}
	s.backend.cat = s.cat
	ctx := context.Background()
	if err := s.cat.EnsureProject(ctx, s.cfg.Project); err != nil {
		return fmt.Errorf("server: project %q: %w", s.cfg.Project, err)
	}
	if err := s.backend.reconcile(ctx, s.log); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// missingCatalogError is the refusal to start a data dir holding n
// tables without its CATALOG. The catalog is CATALOG (a checkpoint) and
// CATALOG.log (the changes since it): the message says which is there,
// and that CATALOG alone lacks the log's changes.
func missingCatalogError(dir string, n int) error {
	catName := filepath.Join(dir, catalog.FileName)
	logName := filepath.Join(dir, catalog.LogFileName)
	tables := filepath.Join(dir, "tables")
	if _, err := os.Stat(logName); err == nil {
		return fmt.Errorf("server: data dir %s holds %d tables but its catalog checkpoint %s is missing (%s, which holds only the changes since that checkpoint, is there): refusing to start, which would find every table unknown to the catalog (kept, but quarantined: none served); restore %s (a copy older than the log's first change fails to open, naming the missing changes), or move %s aside to start with an empty data dir",
			dir, n, catName, logName, catalog.FileName, tables)
	}
	return fmt.Errorf("server: data dir %s holds %d tables but its catalog files %s and %s are missing: refusing to start, which would find every table unknown to the catalog (kept, but quarantined: none served); restore CATALOG and CATALOG.log together, as of the same moment (CATALOG alone lacks the changes since its last checkpoint: the tables they created would start quarantined, not served, until the log is restored), or move %s aside to start with an empty data dir",
		dir, n, catName, logName, tables)
}

// tableStats reports a table's visible rows and bytes (REST numRows,
// numBytes); ok is false when the engine cannot serve the table (it is
// quarantined), so nothing is claimed.
func (s *Server) tableStats(id string) (rows, bytes int64, ok bool) {
	t, err := s.db.Table(id)
	if err != nil {
		return 0, 0, false
	}
	rows, bytes = t.Stats()
	return rows, bytes, true
}

// closeResources closes what Start opened besides the listeners' servers:
// the engine (which syncs) and the data-dir lock, last.
func (s *Server) closeResources() error {
	var errs []error
	if s.grpcSrv == nil {
		if s.grpcLis != nil {
			errs = append(errs, s.grpcLis.Close())
		}
		if s.httpLis != nil {
			errs = append(errs, s.httpLis.Close())
		}
		if s.adminLis != nil {
			errs = append(errs, s.adminLis.Close())
		}
	}
	if s.compactor != nil {
		s.compactor.stop()
		s.compactor = nil
	}
	if s.read != nil {
		s.read.Close()
		s.read = nil
	}
	if s.jobs != nil {
		// Before the engine: running jobs write to it.
		errs = append(errs, s.jobs.Close())
		s.jobs = nil
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
		s.db = nil
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
		s.lock = nil
	}
	return errors.Join(errs...)
}
