package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxAdminBody caps a PUT /admin/faults body.
const maxAdminBody = 1 << 20

// AdminHandler serves the installed faults over HTTP:
//
//	GET /admin/faults   the Status as JSON
//	PUT /admin/faults   install a spec: a JSON body {"seed":N,"faults":[...]}
//	                    (seed optional: the current one), or the text form
//	                    with the seed in the query (?seed=N)
//
// PUT answers with the new Status; a bad spec is 400 with the error.
func (in *Injector) AdminHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
		case http.MethodPut, http.MethodPost:
			if err := in.put(r); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		default:
			w.Header().Set("Allow", "GET, PUT")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(in.Status())
	})
}

func (in *Injector) put(r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody+1))
	if err != nil {
		return fmt.Errorf("faults: read body: %w", err)
	}
	if len(body) > maxAdminBody {
		return fmt.Errorf("faults: body over %d bytes", maxAdminBody)
	}
	seed := int64(in.Status().Seed)
	if q := r.URL.Query().Get("seed"); q != "" {
		if seed, err = strconv.ParseInt(q, 10, 64); err != nil {
			return fmt.Errorf("faults: seed %q: %w", q, err)
		}
	}
	spec, docSeed, err := ParseDocument(string(body))
	if err != nil {
		return err
	}
	if docSeed != nil {
		seed = *docSeed
	}
	return in.Set(spec, seed)
}

// ParseDocument parses a fault set as PUT /admin/faults and
// `serve --faults` take it: the text form, a bare JSON array, or a JSON
// document {"seed":N,"faults":[...]}, which may be GET /admin/faults's
// output (its "installed" and "stats" are ignored). seed is the
// document's seed (nil: none given).
func ParseDocument(s string) (spec Spec, seed *int64, err error) {
	text := strings.TrimSpace(s)
	if !strings.HasPrefix(text, "{") {
		spec, err = Parse(text)
		return spec, nil, err
	}
	var doc struct {
		Seed   *int64  `json:"seed"`
		Faults []Fault `json:"faults"`
		// What GET adds, so that its output can be PUT back.
		Installed json.RawMessage `json:"installed"`
		Stats     json.RawMessage `json:"stats"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return Spec{}, nil, fmt.Errorf("faults: JSON: %w", err)
	}
	spec = Spec{Faults: doc.Faults}
	if err := spec.Validate(); err != nil {
		return Spec{}, nil, err
	}
	return spec, doc.Seed, nil
}
