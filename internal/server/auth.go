package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/bqstore/bqstore/internal/rest"
)

// tokens maps bearer tokens to principals and the projects they may use
// (--auth-tokens). A nil *tokens admits everyone (the default, for local
// use).
type tokens struct {
	byToken map[string]principal
}

type principal struct {
	name     string
	projects map[string]bool // "*": every project
}

// loadTokens reads a tokens file: one principal per line,
//
//	TOKEN PRINCIPAL PROJECT[,PROJECT...]
//
// with * for every project; blank lines and lines starting with # are
// skipped.
func loadTokens(file string) (*tokens, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("server: auth tokens: %w", err)
	}
	defer f.Close()
	t := &tokens{byToken: make(map[string]principal)}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			return nil, fmt.Errorf("server: auth tokens %s:%d: want TOKEN PRINCIPAL PROJECT[,PROJECT...]", file, n)
		}
		p := principal{name: fs[1], projects: make(map[string]bool)}
		for _, pr := range strings.Split(fs[2], ",") {
			if pr != "" {
				p.projects[pr] = true
			}
		}
		t.byToken[fs[0]] = p
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("server: auth tokens: %w", err)
	}
	if len(t.byToken) == 0 {
		return nil, fmt.Errorf("server: auth tokens %s: no tokens", file)
	}
	return t, nil
}

// BigQuery's messages for a missing or bad credential and a forbidden
// project.
const (
	msgUnauthenticated = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential."
	msgInvalidToken    = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
)

func msgDenied(who, project string) string {
	return fmt.Sprintf("Access Denied: Project %s: User %s does not have permission to use project %s.", project, who, project)
}

// lookup finds the principal of an Authorization value ("Bearer TOKEN").
func (t *tokens) lookup(auth string) (principal, string, bool) {
	if auth == "" {
		return principal{}, msgUnauthenticated, false
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		tok, ok = strings.CutPrefix(auth, "bearer ")
	}
	p, found := t.byToken[strings.TrimSpace(tok)]
	if !ok || !found {
		return principal{}, msgInvalidToken, false
	}
	return p, "", true
}

func (p principal) may(project string) bool { return p.projects["*"] || p.projects[project] }

// visible reports whether the caller of r may use project; for
// projects.list (rest.Options.ProjectVisible).
func (t *tokens) visible(r *http.Request, project string) bool {
	p, _, ok := t.lookup(r.Header.Get("Authorization"))
	return ok && p.may(project)
}

// projectOf returns the project a resource name names
// ("projects/P/..."), or "".
func projectOf(name string) string {
	rest, ok := strings.CutPrefix(name, "projects/")
	if !ok {
		return ""
	}
	p, _, _ := strings.Cut(rest, "/")
	return p
}

// requestProjects returns the projects a Storage API request names: every
// string field holding a resource name, one level of messages deep
// (CreateReadSession's read_session.table).
func requestProjects(m proto.Message) []string {
	var out []string
	var walk func(r protoreflect.Message, depth int)
	walk = func(r protoreflect.Message, depth int) {
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() || fd.IsMap():
			case fd.Kind() == protoreflect.StringKind:
				if p := projectOf(v.String()); p != "" {
					out = append(out, p)
				}
			case fd.Kind() == protoreflect.MessageKind && depth == 0:
				walk(v.Message(), depth+1)
			}
			return true
		})
	}
	walk(m.ProtoReflect(), 0)
	return out
}

// authorize checks a gRPC call's credentials and the projects of msg.
func (t *tokens) authorize(ctx context.Context, msg any) error {
	md, _ := metadata.FromIncomingContext(ctx)
	var auth string
	if v := md.Get("authorization"); len(v) > 0 {
		auth = v[0]
	}
	p, why, ok := t.lookup(auth)
	if !ok {
		return status.Error(codes.Unauthenticated, why)
	}
	if m, ok := msg.(proto.Message); ok {
		for _, pr := range requestProjects(m) {
			if !p.may(pr) {
				return status.Error(codes.PermissionDenied, msgDenied(p.name, pr))
			}
		}
	}
	return nil
}

// exempt: health checks need no credentials.
func exempt(method string) bool { return strings.HasPrefix(method, "/grpc.health.v1.") }

func (t *tokens) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if !exempt(info.FullMethod) {
		if err := t.authorize(ctx, req); err != nil {
			return nil, err
		}
	}
	return h(ctx, req)
}

func (t *tokens) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if exempt(info.FullMethod) {
		return h(srv, ss)
	}
	if err := t.authorize(ss.Context(), nil); err != nil {
		return err
	}
	return h(srv, &authStream{ServerStream: ss, t: t})
}

// authStream checks the projects of every message received (AppendRows
// names its stream in the first request and whenever it changes).
type authStream struct {
	grpc.ServerStream
	t *tokens
}

func (s *authStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.t.authorize(s.Context(), m)
}

// httpAuth checks the public HTTP port's requests (all but /healthz and
// the discovery document, which is public as Google's are): the
// bearer token, and the project in the URL path, with BigQuery's 401 and
// 403 shapes.
func (t *tokens) httpAuth(next http.Handler, rh *rest.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || rest.IsDiscoveryPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		p, why, ok := t.lookup(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bqstore"`)
			rh.WriteError(w, r, &rest.Error{Code: http.StatusUnauthorized, Reason: "required", Msg: why})
			return
		}
		path := strings.TrimPrefix(r.URL.Path, "/bigquery/v2")
		if pr := projectOf(strings.TrimPrefix(path, "/")); pr != "" && !p.may(pr) {
			rh.WriteError(w, r, &rest.Error{Code: http.StatusForbidden, Reason: "accessDenied", Msg: msgDenied(p.name, pr)})
			return
		}
		next.ServeHTTP(w, r)
	})
}
