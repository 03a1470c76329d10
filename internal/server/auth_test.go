package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/bqstore/bqstore/internal/server"
	"github.com/bqstore/bqstore/internal/testkit"
)

// TestAuthTokens: with --auth-tokens, a missing or unknown bearer token is
// UNAUTHENTICATED / 401 and a project the token does not list is
// PERMISSION_DENIED / 403, on both ports, in BigQuery's shapes; health
// checks need no token.
func TestAuthTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# token principal projects\nalpha alice@example.com local\nomega admin@example.com *\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testkit.Start(t, func(c *server.Config) { c.AuthTokensFile = file })
	base := "http://" + srv.HTTPAddr()

	rest := func(method, path, token, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return do(t, req)
	}
	create := `{"datasetReference":{"datasetId":"d"}}`
	for _, tc := range []struct {
		path, token string
		code        int
		status      string
	}{
		{"/bigquery/v2/projects/local/datasets", "", 401, "UNAUTHENTICATED"},
		{"/bigquery/v2/projects/local/datasets", "wrong", 401, "UNAUTHENTICATED"},
		{"/bigquery/v2/projects/other/datasets", "alpha", 403, "PERMISSION_DENIED"},
		{"/bigquery/v2/projects/local/datasets", "alpha", 200, ""},
		{"/bigquery/v2/projects/other/datasets", "omega", 200, ""},
	} {
		code, body := rest("POST", tc.path, tc.token, create)
		if code != tc.code {
			t.Errorf("POST %s token %q: %d %s, want %d", tc.path, tc.token, code, body, tc.code)
			continue
		}
		if tc.status != "" {
			var we struct {
				Error struct {
					Code   int
					Status string
					Errors []struct{ Reason string }
				}
			}
			if err := json.Unmarshal([]byte(body), &we); err != nil || we.Error.Status != tc.status || we.Error.Code != tc.code || len(we.Error.Errors) != 1 {
				t.Errorf("POST %s token %q: body %s, want BigQuery's error shape with %s", tc.path, tc.token, body, tc.status)
			}
		}
	}
	// projects.list shows a token the projects it may use, as BigQuery
	// lists the projects the caller has access to.
	for token, want := range map[string]string{"alpha": "[local]", "omega": "[local other]"} {
		code, body := rest("GET", "/bigquery/v2/projects", token, "")
		var l struct {
			Projects []struct{ ID string }
		}
		if err := json.Unmarshal([]byte(body), &l); code != 200 || err != nil {
			t.Fatalf("projects.list token %s: %d %s", token, code, body)
		}
		var got []string
		for _, p := range l.Projects {
			got = append(got, p.ID)
		}
		if fmt.Sprint(got) != want {
			t.Errorf("projects.list token %s: %v, want %s", token, got, want)
		}
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz without a token: %d", code)
	}
	// The discovery document is public, as Google's are.
	for _, path := range []string{"/$discovery/rest?version=v2", "/discovery/v1/apis/bigquery/v2/rest"} {
		if code, body := rest("GET", path, "", ""); code != 200 {
			t.Errorf("%s without a token: %d %s", path, code, body)
		}
	}

	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health without a token: %v", err)
	}
	wc := storagepb.NewBigQueryWriteClient(conn)
	with := func(token string) context.Context {
		if token == "" {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	for _, tc := range []struct {
		project, token string
		want           codes.Code
	}{
		{"local", "", codes.Unauthenticated},
		{"local", "wrong", codes.Unauthenticated},
		{"other", "alpha", codes.PermissionDenied},
		{"local", "alpha", codes.NotFound}, // authorized: the table does not exist
	} {
		_, err := wc.GetWriteStream(with(tc.token), &storagepb.GetWriteStreamRequest{Name: "projects/" + tc.project + "/datasets/d/tables/t/streams/_default"})
		if status.Code(err) != tc.want {
			t.Errorf("GetWriteStream %s token %q: %v, want %v", tc.project, tc.token, err, tc.want)
		}
	}
	// AppendRows: the stream named in a request is checked.
	s, err := wc.AppendRows(with("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&storagepb.AppendRowsRequest{WriteStream: "projects/other/datasets/d/tables/t/streams/_default"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.PermissionDenied {
		t.Errorf("AppendRows to another project: %v, want PERMISSION_DENIED", err)
	}
}

// TestAuthTokensBadFile: a tokens file that does not parse stops the start.
func TestAuthTokensBadFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("just-a-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Start(server.Config{DataDir: t.TempDir(), GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", AuthTokensFile: file}); err == nil {
		t.Fatal("started with a malformed tokens file")
	}
}
