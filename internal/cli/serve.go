package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

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
	fs.StringVar(&cfg.Project, "project", envDefault(env, "BQSTORE_PROJECT", server.DefaultProject), "a project that exists from the start (env BQSTORE_PROJECT)")
	logFormat := fs.String("log-format", envDefault(env, "BQSTORE_LOG_FORMAT", "text"), "log format: text or json (env BQSTORE_LOG_FORMAT)")
	logLevel := fs.String("log-level", envDefault(env, "BQSTORE_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env BQSTORE_LOG_LEVEL)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	logger, err := newLogger(env, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger

	srv, err := server.Start(cfg)
	if err != nil {
		return err
	}
	// One line with both chosen addresses, for tests and scripts.
	logger.Info(fmt.Sprintf("listening grpc=%s http=%s", srv.GRPCAddr(), srv.HTTPAddr()))
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
