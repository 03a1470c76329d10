package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bqstore/bqstore/internal/schema"
)

// apiClient is the catalog verbs' REST v2 client: a thin JSON-over-HTTP
// caller of a running bqstore (or anything speaking BigQuery's REST v2).
type apiClient struct {
	base string // e.g. "http://127.0.0.1:9050", no trailing slash
	http *http.Client
}

// apiError is an error answered by the server, in Google's JSON shape.
type apiError struct {
	Code    int
	Reason  string
	Message string
}

func (e *apiError) Error() string { return e.Message }

func newAPIClient(base string) (*apiClient, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--api: %q is not an http(s) URL such as http://127.0.0.1:9050", base)
	}
	return &apiClient{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// call sends a request and decodes a JSON answer into out (if not nil).
func (c *apiClient) call(ctx context.Context, method, path string, hdr http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return restUnreachable(c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode >= 300 {
		var ge struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Errors  []struct {
					Reason string `json:"reason"`
				} `json:"errors"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &ge) == nil && ge.Error.Message != "" {
			ae := &apiError{Code: resp.StatusCode, Message: ge.Error.Message}
			if len(ge.Error.Errors) > 0 {
				ae.Reason = ge.Error.Errors[0].Reason
			}
			return ae
		}
		return &apiError{Code: resp.StatusCode, Message: fmt.Sprintf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))}
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decode response of %s %s: %w", method, path, err)
		}
	}
	return nil
}

// Wire types: the members of BigQuery's Dataset and Table resources the
// verbs print. Unknown members are ignored.

type apiDatasetRef struct {
	ProjectID string `json:"projectId"`
	DatasetID string `json:"datasetId"`
}

type apiTableRef struct {
	ProjectID string `json:"projectId"`
	DatasetID string `json:"datasetId"`
	TableID   string `json:"tableId"`
}

type apiDataset struct {
	ID               string            `json:"id,omitempty"`
	ETag             string            `json:"etag,omitempty"`
	DatasetReference apiDatasetRef     `json:"datasetReference"`
	Description      string            `json:"description,omitempty"`
	FriendlyName     string            `json:"friendlyName,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Location         string            `json:"location,omitempty"`
	CreationTime     schema.Int64      `json:"creationTime,omitempty"`
	LastModifiedTime schema.Int64      `json:"lastModifiedTime,omitempty"`
	// DefaultTableExpirationMs is the lifetime of new tables (0: none).
	DefaultTableExpirationMs schema.Int64 `json:"defaultTableExpirationMs,omitempty"`
}

type apiTable struct {
	ID               string            `json:"id,omitempty"`
	ETag             string            `json:"etag,omitempty"`
	TableReference   apiTableRef       `json:"tableReference"`
	Description      string            `json:"description,omitempty"`
	FriendlyName     string            `json:"friendlyName,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Schema           *schema.Schema    `json:"schema,omitempty"`
	NumRows          schema.Int64      `json:"numRows,omitempty"`
	NumBytes         schema.Int64      `json:"numBytes,omitempty"`
	CreationTime     schema.Int64      `json:"creationTime,omitempty"`
	LastModifiedTime schema.Int64      `json:"lastModifiedTime,omitempty"`
	ExpirationTime   schema.Int64      `json:"expirationTime,omitempty"`
	Type             string            `json:"type,omitempty"`
	Location         string            `json:"location,omitempty"`
}

func datasetPath(p, d string) string {
	return "/bigquery/v2/projects/" + url.PathEscape(p) + "/datasets/" + url.PathEscape(d)
}

func tablePath(p, d, t string) string {
	return datasetPath(p, d) + "/tables/" + url.PathEscape(t)
}

// listAll fetches every page of a list method. decode reads one page and
// returns its nextPageToken.
func (c *apiClient) listAll(ctx context.Context, path string, decode func(raw json.RawMessage) (string, error)) error {
	token := ""
	for {
		p := path
		if token != "" {
			p += "?pageToken=" + url.QueryEscape(token)
		}
		var raw json.RawMessage
		if err := c.call(ctx, http.MethodGet, p, nil, nil, &raw); err != nil {
			return err
		}
		next, err := decode(raw)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		token = next
	}
}
