package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bqstore/bqstore/ingest"
)

// parseRoutes parses --route TOPIC=[project:]dataset.table[,TOPIC=...].
func parseRoutes(s, project string) ([]ingest.Route, error) {
	var out []ingest.Route
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		topic, ref, ok := strings.Cut(item, "=")
		if !ok || topic == "" || ref == "" {
			return nil, usagef("--route %q: want TOPIC=[project:]dataset.table[,TOPIC=...]", item)
		}
		if seen[topic] {
			return nil, usagef("--route: topic %q is routed twice", topic)
		}
		seen[topic] = true
		r, err := parseRef(ref, project)
		if err != nil {
			return nil, err
		}
		if r.table == "" {
			return nil, usagef("--route %q: want TOPIC=[project:]dataset.table", item)
		}
		out = append(out, ingest.Route{Topic: topic, Table: fmt.Sprintf("projects/%s/datasets/%s/tables/%s", r.project, r.dataset, r.table)})
	}
	return out, nil
}

// applyRoutes checks the routes against the topics of the kafka:// URL:
// a URL naming none consumes the routed topics; one naming some needs a
// route for each and no other.
func applyRoutes(ks *ingest.KafkaSource, routes []ingest.Route, dlTable string) error {
	var routed []string
	for _, r := range routes {
		if r.Table == dlTable {
			return usagef("--route: topic %q goes to the dead-letter table", r.Topic)
		}
		routed = append(routed, r.Topic)
	}
	topics := ks.SourceTopics()
	if len(topics) == 0 {
		ks.Topic, ks.Topics = "", routed
		return nil
	}
	for _, t := range topics {
		if !slices.Contains(routed, t) {
			return usagef("--source consumes topic %q and no --route names it", t)
		}
	}
	for _, t := range routed {
		if !slices.Contains(topics, t) {
			return usagef("--route names topic %q, which --source does not consume (drop the topics from the URL to consume the routed ones)", t)
		}
	}
	return nil
}
