package cli

// The gRPC commands (extract, bench, ingest) share one set of conventions:
// --endpoint HOST:PORT (env BQSTORE_ENDPOINT, default 127.0.0.1:9060),
// --insecure on for a loopback endpoint and off otherwise, --project (env
// BQSTORE_PROJECT, default local) for [project:]dataset.table references.
// Before any work they check that the endpoint answers gRPC, within
// probeTimeout, so a wrong address is an error within seconds instead of a
// client that waits for minutes.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// DefaultEndpoint is the gRPC address the commands use without
// --endpoint/BQSTORE_ENDPOINT (bqstore serve's default --grpc-addr).
const DefaultEndpoint = "127.0.0.1:9060"

// probeTimeout bounds the first-connection check of an endpoint.
const probeTimeout = 5 * time.Second

// insecureHelp is the --insecure help text of every gRPC command.
const insecureHelp = "plaintext gRPC without credentials, as bqstore serve speaks without --tls-cert (default: on for a loopback --endpoint such as 127.0.0.1 or localhost, off otherwise: TLS with Application Default Credentials)"

// triBool is a boolean flag that knows whether it was set.
type triBool struct {
	set, v bool
}

func (b *triBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.v)
}

func (b *triBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.set, b.v = true, v
	return nil
}

func (b *triBool) IsBoolFlag() bool { return true }

// grpcFlags are the flags of every gRPC command.
type grpcFlags struct {
	endpoint string
	insecure triBool
	project  string
}

// addGRPCFlags registers --endpoint, --insecure and --project.
func addGRPCFlags(env *Env, fs *flag.FlagSet) *grpcFlags {
	g := &grpcFlags{}
	fs.StringVar(&g.endpoint, "endpoint", envDefault(env, "BQSTORE_ENDPOINT", DefaultEndpoint), "Storage API gRPC address HOST:PORT, such as 127.0.0.1:9060 or bigquerystorage.googleapis.com:443 (env BQSTORE_ENDPOINT)")
	fs.Var(&g.insecure, "insecure", insecureHelp)
	fs.StringVar(&g.project, "project", envDefault(env, "BQSTORE_PROJECT", "local"), "project of table references without one (env BQSTORE_PROJECT)")
	return g
}

// resolve validates --endpoint and returns whether to use plaintext.
func (g *grpcFlags) resolve() (plaintext bool, err error) {
	host, err := validateEndpoint(g.endpoint)
	if err != nil {
		return false, err
	}
	if g.insecure.set {
		return g.insecure.v, nil
	}
	return isLoopbackHost(host), nil
}

// validateEndpoint checks that s is HOST:PORT and returns the host.
func validateEndpoint(s string) (string, error) {
	if s == "" {
		return "", usagef("--endpoint is empty: want HOST:PORT, such as %s", DefaultEndpoint)
	}
	if strings.Contains(s, "://") {
		hint := DefaultEndpoint
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			hint = u.Host
		}
		return "", usagef("--endpoint %q is a URL; want HOST:PORT without a scheme, such as %s (URLs are for --api)", s, hint)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", usagef("--endpoint %q: want HOST:PORT, such as %s", s, DefaultEndpoint)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", usagef("--endpoint %q: port %q is not a number from 1 to 65535", s, port)
	}
	return host, nil
}

// isLoopbackHost reports whether host names this machine's loopback
// interface ("" dials it too).
func isLoopbackHost(host string) bool {
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clientOptions are the Google client options for an endpoint.
func clientOptions(endpoint string, plaintext bool) []option.ClientOption {
	opts := []option.ClientOption{option.WithEndpoint(endpoint)}
	if plaintext {
		opts = append(opts, option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	return opts
}

// unreachableError is an endpoint that does not answer: worth waiting for
// (ingest retries it), unlike an endpoint that answers the wrong protocol.
type unreachableError struct{ msg string }

func (e *unreachableError) Error() string { return e.msg }

// checkEndpoint makes one gRPC call (grpc.health.v1.Health/Check) to the
// endpoint within probeTimeout, through grpc-go as the clients dial. Any answer, even UNIMPLEMENTED or
// PERMISSION_DENIED, means a gRPC server is there. Otherwise the error
// says what is wrong: nothing listening (an *unreachableError), an HTTP/1
// server such as bqstore's REST port, or TLS against a plaintext server.
func checkEndpoint(ctx context.Context, endpoint string, plaintext bool) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	host, _, _ := net.SplitHostPort(endpoint)
	creds := insecure.NewCredentials()
	if !plaintext {
		creds = credentials.NewTLS(&tls.Config{ServerName: host})
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(creds))
	if err != nil {
		return usagef("--endpoint %q: %v", endpoint, err)
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if m := status.Convert(err).Message(); strings.Contains(m, "unexpected HTTP status code received from server") || strings.Contains(m, "missing HTTP content-type") {
		// grpc-go's rendering of an HTTP/2 answer without gRPC in it.
		return usagef("%s answers HTTP, not gRPC (%s); --endpoint wants the Storage API's gRPC port (bqstore serve --grpc-addr, default %s)", endpoint, m, DefaultEndpoint)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
	case codes.Canceled:
		return err
	default:
		return nil
	}
	msg := status.Convert(err).Message()
	// The call failed: find out why. A plain TCP dial tells "nothing
	// there" from "something there that is not what we asked for" (the
	// call itself went through grpc-go, which honours HTTPS_PROXY).
	var d net.Dialer
	c, derr := d.DialContext(ctx, "tcp", endpoint)
	if derr != nil {
		if errors.Is(context.Cause(ctx), context.Canceled) {
			return ctx.Err()
		}
		return &unreachableError{fmt.Sprintf("cannot reach bqstore at %s (is bqstore serve running? set --endpoint or BQSTORE_ENDPOINT): %v", endpoint, derr)}
	}
	c.Close()
	if !plaintext && strings.Contains(msg, "first record does not look like a TLS handshake") {
		return usagef("%s speaks plaintext, not TLS: add --insecure (a bqstore serve without --tls-cert)", endpoint)
	}
	if !plaintext && (strings.Contains(msg, "x509: ") || strings.Contains(msg, "tls: ")) {
		return fmt.Errorf("TLS with %s failed: %s (is it a gRPC server over TLS whose certificate this system trusts?)", endpoint, msg)
	}
	if plaintext {
		if speaksTLS(ctx, endpoint) {
			return usagef("%s speaks TLS: use --insecure=false (a bqstore serve with --tls-cert, whose certificate the system must trust)", endpoint)
		}
		if proto := sniffHTTP1(ctx, endpoint); proto != "" {
			return usagef("%s answers %s, not gRPC: it looks like the REST port (bqstore serve --http-addr, default 127.0.0.1:9050); --endpoint wants the gRPC port (--grpc-addr, default %s)", endpoint, proto, DefaultEndpoint)
		}
	}
	return &unreachableError{fmt.Sprintf("bqstore at %s does not answer gRPC within %s (is it the Storage API port of bqstore serve? set --endpoint or BQSTORE_ENDPOINT): %s", endpoint, probeTimeout, msg)}
}

// speaksTLS reports whether endpoint completes a TLS handshake (its
// certificate is not checked: this only tells TLS from plaintext).
func speaksTLS(ctx context.Context, endpoint string) bool {
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // protocol detection only, no data sent
	c, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// sniffHTTP1 sends an HTTP/1.1 request to endpoint and returns the
// protocol of the answer ("HTTP/1.1") if it is HTTP/1, else "".
func sniffHTTP1(ctx context.Context, endpoint string) string {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return ""
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", endpoint); err != nil {
		return ""
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && line == "" {
		return ""
	}
	if proto, _, ok := strings.Cut(line, " "); ok && strings.HasPrefix(proto, "HTTP/1.") {
		return proto
	}
	return ""
}

// checkAPI checks that the REST base URL answers HTTP within probeTimeout
// (any status will do).
func checkAPI(ctx context.Context, base string) error {
	if _, err := newAPIClient(base); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/", nil)
	if err != nil {
		return usagef("--api %q: %v", base, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return restUnreachable(base, err)
	}
	resp.Body.Close()
	return nil
}

// restUnreachable is the error of a REST call that got no HTTP answer.
func restUnreachable(base string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	var op *net.OpError
	ended := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) // the caller gave up: no answer to probe
	if dialErr := errors.As(err, &op) && op.Op == "dial"; !dialErr && !ended && speaksHTTP2First(base) {
		return usagef("%s answers HTTP/2 frames, not HTTP/1: it looks like the gRPC port (bqstore serve --grpc-addr); --api wants the REST port, such as %s", base, DefaultAPI)
	}
	return fmt.Errorf("cannot reach bqstore at %s (is bqstore serve running? set --api or BQSTORE_API): %s", base, msg)
}

// speaksHTTP2First reports whether the server of base sends an HTTP/2
// SETTINGS frame as soon as a connection opens, as a gRPC server does (an
// HTTP/1 server waits for a request). Depending on when it arrives, Go's
// HTTP client reports such an answer in several ways ("malformed HTTP
// response", "readLoopPeekFailLocked"), so the port is asked directly.
func speaksHTTP2First(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return false
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443"}[u.Scheme]+map[string]string{"http": "80"}[u.Scheme])
	}
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(probeTimeout))
	var hdr [9]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return false
	}
	return hdr[3] == 0x4 // frame type SETTINGS
}

// credentialsHint adds what to do to a missing-credentials error for a
// loopback endpoint (bqstore serve needs none).
func credentialsHint(err error, endpoint string) error {
	if err == nil || !strings.Contains(err.Error(), "could not find default credentials") {
		return err
	}
	if host, _, _ := net.SplitHostPort(endpoint); isLoopbackHost(host) {
		return fmt.Errorf("%w (for a local bqstore serve, which needs no credentials, use --insecure)", err)
	}
	return err
}

// waitEndpoint is checkEndpoint for a long-running command (ingest): an
// unreachable endpoint is logged and retried with capped exponential
// backoff (1s, 2s, 4s ... 30s) until it answers or ctx ends, so a pipeline
// started before its server says what it waits for instead of staying
// silent. A wrong endpoint (a URL, the REST port) fails at once.
func waitEndpoint(ctx context.Context, log *slog.Logger, endpoint string, plaintext bool) error {
	delay := time.Second
	for attempt := 1; ; attempt++ {
		err := checkEndpoint(ctx, endpoint, plaintext)
		var ue *unreachableError
		if !errors.As(err, &ue) {
			if err == nil && attempt > 1 {
				log.Info("endpoint reachable", "endpoint", endpoint, "attempts", attempt)
			}
			return err
		}
		log.Warn(ue.msg, "attempt", attempt, "retry_in", delay.String())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 30*time.Second)
	}
}
