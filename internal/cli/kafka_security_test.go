package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqstore/bqstore/internal/testkit/testcert"

	"github.com/bqstore/bqstore/internal/testkit/bqread"

	"cloud.google.com/go/bigquery"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/server"
)

// lockedBuffer is stderr shared by the command and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{} // signalled on every write
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestIngestKafkaTLSSASL ingests from a kfake cluster that requires SASL
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), over TLS with a generated loopback
// certificate or in plaintext, through the command line with the
// credentials in the environment.
func TestIngestKafkaTLSSASL(t *testing.T) {
	srv, err := server.Start(server.Config{DataDir: t.TempDir(), GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	ctx := context.Background()
	bq, err := bigquery.NewClient(ctx, "p", option.WithEndpoint("http://"+srv.HTTPAddr()), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mech, kfakeMech string
		tls             bool
	}{
		{"plain", "PLAIN", true},
		{"scram-sha-256", "SCRAM-SHA-256", false},
		{"scram-sha-512", "SCRAM-SHA-512", true},
	} {
		t.Run(fmt.Sprintf("sasl=%s/tls=%v", tc.mech, tc.tls), func(t *testing.T) {
			dir := t.TempDir()
			opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "events"), kfake.EnableSASL(), kfake.Superuser(tc.kfakeMech, "alice", "s3cret")}
			var caFile string
			var clientTLS *tls.Config
			if tc.tls {
				var srvTLS *tls.Config
				srvTLS, caFile = testcert.ServerConfig(t, dir)
				opts = append(opts, kfake.TLS(srvTLS))
				pemBytes, err := os.ReadFile(caFile)
				if err != nil {
					t.Fatal(err)
				}
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pemBytes)
				clientTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
			}
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			table := "t_" + strings.ReplaceAll(tc.mech, "-", "_")
			if err := bq.Dataset("d").Table(table).Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{
				{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
			}}); err != nil {
				t.Fatal(err)
			}

			// Produce with a client configured by hand, as a user's
			// producer would be.
			popts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
			switch tc.mech {
			case "plain":
				popts = append(popts, kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()))
			case "scram-sha-256":
				popts = append(popts, kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism()))
			case "scram-sha-512":
				popts = append(popts, kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism()))
			}
			if clientTLS != nil {
				popts = append(popts, kgo.DialTLSConfig(clientTLS))
			}
			prod, err := kgo.NewClient(popts...)
			if err != nil {
				t.Fatal(err)
			}
			const n = 20
			for i := range n {
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, `{"id":%d}`, i)}).FirstErr(); err != nil {
					t.Fatalf("produce: %v", err)
				}
			}
			prod.Close()

			source := fmt.Sprintf("kafka://%s/events?group=g&sasl=%s", strings.Join(c.ListenAddrs(), ","), tc.mech)
			if tc.tls {
				source += "&tls=true"
			}
			vars := map[string]string{ingest.EnvKafkaUsername: "alice", ingest.EnvKafkaPassword: "s3cret", ingest.EnvKafkaCAFile: caFile}
			stderr := &lockedBuffer{ch: make(chan struct{}, 1)}
			env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: stderr, LookupEnv: func(k string) (string, bool) {
				v, ok := vars[k]
				return v, ok && v != ""
			}}
			args := []string{"--endpoint", srv.GRPCAddr(), "--table", "p:d." + table, "--source", source, "--start", "earliest",
				"--batch-age", "100ms", "--log-level", "debug"}
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- runIngest(rctx, env, args) }()
			bound := time.NewTimer(2 * time.Minute) // a hang bound, not a performance threshold
			defer bound.Stop()
			for {
				select {
				case err := <-done:
					t.Fatalf("ingest stopped: %v\n%s", err, stderr.String())
				case <-bound.C:
					t.Fatalf("ingest did not commit %d rows within the bound\n%s", n, stderr.String())
				case <-stderr.ch:
				}
				if !strings.Contains(stderr.String(), "batch committed") {
					continue
				}
				if got := countRows(t, bq, table); got == n {
					break
				} else if got > n {
					t.Fatalf("%d rows, want %d", got, n)
				}
			}
			cancel()
			<-done
		})
	}
}

func countRows(t *testing.T, bq *bigquery.Client, table string) int {
	t.Helper()
	it := bq.Dataset("d").Table(table).Read(context.Background())
	n := 0
	for {
		var row []bigquery.Value
		err := bqread.NextRow(it, &row)
		if err == iterator.Done {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
}

// TestIngestKafkaSASLWrongPassword: a rejected login stops the run with
// the broker's reason instead of retrying in silence.
func TestIngestKafkaSASLWrongPassword(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "alice", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, err := server.Start(server.Config{DataDir: t.TempDir(), GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	vars := map[string]string{ingest.EnvKafkaUsername: "alice", ingest.EnvKafkaPassword: "wrong"}
	env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, LookupEnv: func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}}
	source := fmt.Sprintf("kafka://%s/events?group=g&sasl=scram-sha-256", strings.Join(c.ListenAddrs(), ","))
	done := make(chan error, 1)
	go func() {
		done <- runIngest(context.Background(), env, []string{"--endpoint", srv.GRPCAddr(), "--table", "p:d.t", "--source", source, "--start", "earliest"})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), ingest.EnvKafkaPassword) {
			t.Fatalf("err = %v, want an error naming the credentials", err)
		}
		t.Log(err)
	case <-time.After(2 * time.Minute): // a hang bound, not a performance threshold
		t.Fatal("ingest with a wrong password did not stop")
	}
}
