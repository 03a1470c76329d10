package ingest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/protobuf/proto"

	"github.com/bqstore/bqstore/ingest/rows"
)

// Route sends the records of one source topic to one table (fan-out:
// Config.Routes).
type Route struct {
	Topic string
	Table string // "projects/P/datasets/D/tables/T"
}

// TopicSource is a Source whose partitions belong to named topics (Kafka):
// with Config.Routes, every topic it consumes needs a route.
type TopicSource interface {
	Source
	SourceTopics() []string
}

// TopicPartition is a Partition of a TopicSource.
type TopicPartition interface {
	Partition
	Topic() string
}

// ErrNoRoute means a routed run (Config.Routes) consumes a topic that no
// route names, or a route names a topic the source does not consume.
var ErrNoRoute = errors.New("ingest: routes and source topics differ")

// dest is one destination table and what the partitions routed to it
// share: their committer, their mapper and the identity their states
// record.
type dest struct {
	table string
	// tables are what a seal's SealedStream.Table indexes for the
	// partitions routed here: 0 this table, 1 the dead-letter table when
	// configured. The index is local to the destination, so adding a
	// route does not renumber the seals of the others.
	tables []string
	// committers[i] commits the streams of tables[i]; the dead-letter
	// table's committer is shared by every destination.
	committers []*committer
	// configID identifies tables in every state a partition routed here
	// stores (State.Config): a partition whose route changed fails
	// closed with ErrConfigChanged.
	configID string
	// workers counts the running partitions routed here: the window of
	// this table's committer closes once each has a request in it.
	workers atomic.Int64

	mu struct {
		sync.Mutex
		schema *storagepb.TableSchema
		mapper *rows.Mapper
	}
}

// buildDests checks the destinations of cfg (Table, or Routes) and returns
// them by topic ("" when unrouted), with one committer per table.
// REQUIRES: p.cfg and p.log set.
func (p *pipeline) buildDests() error {
	cfg := p.cfg
	dl := cfg.DeadLetterTable
	if dl != "" && !tableName.MatchString(dl) {
		return fmt.Errorf("ingest: dead-letter table %q is not projects/P/datasets/D/tables/T", dl)
	}
	routes := cfg.Routes
	if len(routes) == 0 {
		routes = []Route{{Table: cfg.Table}}
	} else {
		if cfg.Table != "" {
			return errors.New("ingest: Config.Table and Config.Routes: give one")
		}
		ts, ok := cfg.Source.(TopicSource)
		if !ok {
			return errors.New("ingest: routes need a source of topics (Kafka)")
		}
		topics := ts.SourceTopics()
		byTopic := map[string]bool{}
		for _, r := range routes {
			if r.Topic == "" || byTopic[r.Topic] {
				return fmt.Errorf("ingest: route %q=%q: empty or repeated topic", r.Topic, r.Table)
			}
			byTopic[r.Topic] = true
			if !slices.Contains(topics, r.Topic) {
				return fmt.Errorf("%w: a route names topic %q, which the source does not consume (%s)", ErrNoRoute, r.Topic, strings.Join(topics, ","))
			}
		}
		for _, t := range topics {
			if !byTopic[t] {
				return fmt.Errorf("%w: the source consumes topic %q and no route names it", ErrNoRoute, t)
			}
		}
	}
	var dlc *committer
	if dl != "" {
		dlc = newCommitter(p, dl)
		p.committers = append(p.committers, dlc)
	}
	byTable := map[string]*dest{}
	p.dests = map[string]*dest{}
	for _, r := range routes {
		if !tableName.MatchString(r.Table) {
			return fmt.Errorf("ingest: table %q is not projects/P/datasets/D/tables/T", r.Table)
		}
		if r.Table == dl {
			return errors.New("ingest: the dead-letter table is the destination table")
		}
		d := byTable[r.Table]
		if d == nil {
			d = &dest{table: r.Table, tables: []string{r.Table}}
			c := newCommitter(p, r.Table)
			c.workers = &d.workers
			p.committers = append(p.committers, c)
			d.committers = []*committer{c}
			if dl != "" {
				d.tables = append(d.tables, dl)
				d.committers = append(d.committers, dlc)
			}
			d.configID = configID(d.tables...)
			byTable[r.Table] = d
		}
		p.dests[r.Topic] = d
	}
	return nil
}

// destFor returns the destination of a partition.
func (p *pipeline) destFor(part Partition) (*dest, error) {
	if len(p.cfg.Routes) == 0 {
		return p.dests[""], nil
	}
	tp, ok := part.(TopicPartition)
	if !ok {
		return nil, fmt.Errorf("ingest: partition %s names no topic to route by", part.Key())
	}
	d := p.dests[tp.Topic()]
	if d == nil {
		return nil, fmt.Errorf("%w: partition %s of topic %q has no route", ErrNoRoute, part.Key(), tp.Topic())
	}
	return d, nil
}

// mapperFor returns the mapper for a stream's schema, rebuilding it when
// the table's schema changed (schema evolution happens at batch boundaries:
// each batch's stream reports the schema it accepts).
func (d *dest) mapperFor(p *pipeline, schema *storagepb.TableSchema) (*rows.Mapper, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.mapper != nil && proto.Equal(d.mu.schema, schema) {
		return d.mu.mapper, nil
	}
	m, err := rows.New(schema, p.cfg.Unknown)
	if err != nil {
		return nil, fmt.Errorf("ingest: table %s: %w", d.table, err)
	}
	if d.mu.mapper != nil {
		p.log.Info("table schema changed, new batches use it", "table", d.table, "columns", len(schema.GetFields()))
	}
	d.mu.schema, d.mu.mapper = schema, m
	return m, nil
}
