package ingest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"golang.org/x/sync/semaphore"

	"github.com/bqstore/bqstore/ingest/rows"
)

// Config configures a pipeline run. Client, Table (or Routes), Source and
// Ledger are required; zero values elsewhere take the defaults documented
// per field.
type Config struct {
	// Client talks to the Storage Write API: real BigQuery or bqstore
	// serve. The pipeline uses only the public RPCs.
	Client storagepb.BigQueryWriteClient
	// Table is "projects/P/datasets/D/tables/T".
	Table string
	// Routes, instead of Table, send each topic of a TopicSource (Kafka)
	// to its own table (fan-out): every topic the source consumes needs
	// exactly one route, or the run stops at start with ErrNoRoute.
	// Topics may share a table. Each table gets its own streams and one
	// BatchCommitWriteStreams per window; a partition's state records its
	// route (State.Config), so a topic routed elsewhere than in its state
	// fails closed with ErrConfigChanged. A DeadLetterTable is one table
	// for every route.
	Routes []Route
	// Source yields the partitions; Ledger stores their seals.
	Source Source
	Ledger Ledger
	// Start is where a partition without a stored state begins (a first
	// run). Unset, such a partition stops the run with ErrNoStart: a lost
	// state (wiped state directory, expired Kafka offsets) is never a
	// silent replay. A Kafka partition without a state while others have
	// one only starts at StartEarliest.
	Start StartPosition
	// DeadLetters receives records that do not fit the table. Nil makes
	// such a record stop the pipeline with its RecordError.
	DeadLetters *DeadLetters
	// DeadLetterTable ("projects/P/datasets/D/tables/T"), instead of
	// DeadLetters, receives those records as rows (deadletter_table.go:
	// source, partition, offset, key, raw, error, time) in a PENDING
	// stream of its own that the batch's seal names next to the data
	// stream: committed and recovered like data, so dead letters are
	// exactly once for Kafka too. The table's state identity includes it
	// (State.Config): adding or changing it needs a new state.
	DeadLetterTable string
	// Unknown says what to do with JSON keys that name no column.
	Unknown rows.UnknownFields

	// Batch bounds: a batch closes at the first bound reached, always at a
	// record boundary. Defaults: 64 MiB, 1,000,000 rows, 1 s.
	MaxBatchBytes int64
	MaxBatchRows  int64
	MaxBatchAge   time.Duration
	// RequestBytes is the target size of one AppendRows request (1 MiB).
	RequestBytes int
	// Lease bounds the time a batch may take from stream creation to its
	// finalize (MaxBatchAge + 30 s). A batch over its lease is abandoned,
	// never committed, and its range replayed.
	Lease time.Duration
	// CommitWindow is how long the committer gathers sealed streams before
	// one BatchCommitWriteStreams (50 ms), at most: the window closes as
	// soon as every running partition has a batch in it (one file: at
	// once).
	CommitWindow time.Duration
	// MaxCommitStreams caps the streams named in one
	// BatchCommitWriteStreams call (100); more take several calls. It
	// bounds each call's size and latency (BigQuery documents no limit;
	// Beam's single commit per job ran into its commit quota, beam#31872).
	MaxCommitStreams int
	// MaxSpareAge bounds how long an idle partition keeps an unused stream
	// for its next batch (1 min). Streams report the table schema as of
	// their creation, so this bounds how long an idle partition keeps
	// mapping with a schema that predates a table change.
	MaxSpareAge time.Duration
	// MemoryBudget bounds the bytes read, mapped and in flight (256 MiB).
	// At the budget, partitions pause reading. A Kafka source takes half
	// of it for its fetch buffers and the records fetched and not yet
	// read (KafkaSource.MemoryBudget, unless set there); appends in
	// flight get the rest.
	MemoryBudget int64
	// SkipDeletedRecords makes a partition step over source records that
	// were deleted before they were committed (Kafka retention or
	// DeleteRecords), logging and counting the gap. By default such a gap
	// stops the pipeline with a RecordsGoneError naming the partition and
	// the offsets (crash table row 17: loss outside our control is
	// reported, not hidden).
	SkipDeletedRecords bool
	// OnCommit, when set, is called once per batch after its rows became
	// visible (BatchCommitWriteStreams succeeded) and before the
	// partition's state moves past it, on the partition's goroutine: keep
	// it short. Benchmarks use it for event-to-visible latency.
	OnCommit func(Committed)
	// CreateRate bounds CreateWriteStream calls per second (20; BigQuery's
	// best practices: past 40-50 calls/s their latency grows past 25 s,
	// and a longer-term quota caps the rate). Every batch that has rows
	// takes one stream, so it also caps batches per second: at 20, a
	// partition of 1,000-row batches commits at most 20,000 rows/s.
	// math.Inf(1) lifts it (bqstore serve has no such quota unless one
	// is configured).
	CreateRate float64
	// Backoff for RESOURCE_EXHAUSTED and UNAVAILABLE (100 ms base, 10 s cap).
	Backoff Backoff
	// MaxReplays bounds how many times in a row one batch may be abandoned
	// and replayed without progress before the partition fails closed with
	// the last error (16). An attempt that learned rows the server refuses
	// (row_errors, replayed as dead letters) counts as progress.
	MaxReplays int

	// Health receives the partitions paused by an error (nil: a private
	// one). A source of several partitions (Kafka) pauses a partition
	// whose worker fails instead of stopping the run, except for the
	// configuration errors ErrNoStart and ErrConfigChanged and injected
	// crashes (Hooks); a single-partition source (a file) stops the run.
	Health *Health

	Hooks   Hooks
	Metrics *Metrics     // nil: unregistered collectors
	Logger  *slog.Logger // nil: discard
}

// Committed is a batch whose rows are visible in the table.
type Committed struct {
	Partition string
	Batch     uint64
	// From and To are the batch's source range [From, To).
	From, To int64
	Rows     int64
	// Time is the commit_time BigQuery reported for the batch's streams
	// (the latest, when a recovery finds some committed earlier).
	Time time.Time
}

// ErrConfigChanged means a partition's state was written for another
// destination table.
var ErrConfigChanged = errors.New("ingest: the partition state belongs to another destination")

// configID hashes the destination tables: 16 hex digits in every state.
func configID(tables ...string) string {
	h := sha256.New()
	for _, t := range tables {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// maxAppendRequestBytes is BigQuery's AppendRows request limit (10 MB).
const maxAppendRequestBytes = 10_000_000

var tableName = regexp.MustCompile(`^projects/[^/]+/datasets/[^/]+/tables/[^/]+$`)

type pipeline struct {
	cfg         Config
	log         *slog.Logger
	metrics     *Metrics
	createLimit *TokenBucket
	budget      *semaphore.Weighted // appendBudget bytes: requests in flight
	// workers counts the partitions whose worker runs: each has at most
	// one commit request at a committer at a time, so a committer whose
	// window holds that many requests has nothing more to wait for.
	workers atomic.Int64
	// appendBudget is what Config.MemoryBudget leaves for appends once
	// the source took its share (memoryBudgeter).
	appendBudget int64
	// dests are the destinations by topic ("" when unrouted): each has
	// the tables its partitions' seals index (dest.tables).
	dests map[string]*dest
	// committers: one per table, each run until the end of the run.
	committers []*committer
	single     bool // one partition: the dead-letter file may be truncated on recovery
	// owner is this run's token, written in every state it stores, so a
	// read-back tells our state from another owner's (State.Owner).
	owner string

	mu struct {
		sync.Mutex
		// dlSchema and dlMapper map dead-letter rows (DeadLetterTable).
		dlSchema *storagepb.TableSchema
		dlMapper *rows.Mapper
	}
}

// Run ingests every partition of the source until the source ends (files)
// or ctx is cancelled (Kafka), with each source record committed exactly
// once to the table, across any number of crashes and restarts.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Client == nil || cfg.Source == nil {
		return errors.New("ingest: Config needs Client and Source")
	}
	if cfg.Ledger == nil {
		cfg.Ledger = cfg.Source.Ledger()
	}
	if cfg.Ledger == nil {
		return errors.New("ingest: the source needs a Ledger (a state directory)")
	}
	if cfg.DeadLetters != nil {
		// The dead-letter file is truncated to the state's record of it
		// on recovery: it must belong to this state alone.
		if id, ok := cfg.Ledger.(interface{ Identity() string }); ok {
			if err := cfg.DeadLetters.bind(id.Identity()); err != nil {
				return err
			}
		}
	}
	if cfg.DeadLetterTable != "" && cfg.DeadLetters != nil {
		return errors.New("ingest: a dead-letter file and a dead-letter table: give one")
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 64 << 20
	}
	if cfg.MaxBatchRows <= 0 {
		cfg.MaxBatchRows = 1_000_000
	}
	if cfg.MaxBatchAge <= 0 {
		cfg.MaxBatchAge = time.Second
	}
	if cfg.RequestBytes <= 0 {
		cfg.RequestBytes = 1 << 20
	}
	if cfg.RequestBytes > maxAppendRequestBytes-(1<<20) {
		return fmt.Errorf("ingest: RequestBytes %d exceeds the 10 MB AppendRows limit", cfg.RequestBytes)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = cfg.MaxBatchAge + 30*time.Second
	}
	if cfg.CommitWindow <= 0 {
		cfg.CommitWindow = 50 * time.Millisecond
	}
	if cfg.MaxSpareAge <= 0 {
		cfg.MaxSpareAge = time.Minute
	}
	if cfg.MemoryBudget <= 0 {
		cfg.MemoryBudget = 256 << 20
	}
	appendBudget := cfg.MemoryBudget
	if b, ok := cfg.Source.(memoryBudgeter); ok {
		appendBudget -= b.takeMemoryBudget(cfg.MemoryBudget / 2)
	}
	if appendBudget < int64(2*cfg.RequestBytes) {
		return fmt.Errorf("ingest: memory budget %d leaves %d bytes for appends, below two requests (%d bytes)", cfg.MemoryBudget, appendBudget, 2*cfg.RequestBytes)
	}
	if cfg.MaxCommitStreams <= 0 {
		cfg.MaxCommitStreams = 100
	}
	if cfg.MaxReplays <= 0 {
		cfg.MaxReplays = 16
	}
	if cfg.CreateRate <= 0 {
		cfg.CreateRate = 20
	}
	p := &pipeline{
		cfg:          cfg,
		log:          cfg.Logger,
		metrics:      cfg.Metrics,
		createLimit:  NewTokenBucket(cfg.CreateRate, 1),
		budget:       semaphore.NewWeighted(appendBudget),
		appendBudget: appendBudget,
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.metrics == nil {
		p.metrics = NewMetrics(nil)
	}
	if p.cfg.Health == nil {
		p.cfg.Health = NewHealth()
	}
	p.single = cfg.Source.Single()
	if err := p.buildDests(); err != nil {
		return err
	}
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return fmt.Errorf("ingest: owner token: %w", err)
	}
	p.owner = hex.EncodeToString(tok[:])

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cwg sync.WaitGroup
	for _, c := range p.committers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			c.run(ctx)
		}()
	}
	err := cfg.Source.Run(ctx, func(ctx context.Context, part Partition) error {
		p.metrics.PartitionEvents.WithLabelValues("assigned").Inc()
		d, err := p.destFor(part)
		if err != nil {
			return err
		}
		w := &worker{p: p, d: d, part: part, key: part.Key()}
		p.workers.Add(1)
		d.workers.Add(1)
		err = w.run(ctx)
		d.workers.Add(-1)
		p.workers.Add(-1)
		if errors.Is(err, errRevoked) {
			p.metrics.PartitionEvents.WithLabelValues("revoked").Inc()
			p.log.Info("partition revoked; sealed batches finished", "partition", part.Key())
			return nil
		}
		defer p.metrics.PartitionEvents.WithLabelValues("released").Inc()
		if errors.Is(err, ErrFenced) && ctx.Err() == nil && !p.single {
			// Another owner wrote the partition's state, so it is ours no
			// longer, though the group has not told this member yet. Commit
			// nothing more and give the partition up only when the source
			// ends ctx: returning now would leave it assigned here with no
			// worker. Kafka ends it in the revoke or lost callback, and
			// also when the member was dropped from the group and joined
			// again as a new member, which franz-go reports with neither
			// (KafkaSource.synced): if the group hands the partition back,
			// a new worker starts from its stored state.
			p.log.Warn("partition fenced; waiting for the group to take it away", "partition", part.Key(), "err", err)
			<-ctx.Done()
			return nil
		}
		if err != nil && ctx.Err() == nil && !p.single && !isHookError(err) &&
			!errors.Is(err, ErrNoStart) && !errors.Is(err, ErrConfigChanged) && !errors.Is(err, ErrFenced) {
			p.pausePartition(ctx, part, err)
			return nil
		}
		if (errors.Is(err, ErrFenced) && !p.single) || (err != nil && ctx.Err() != nil) {
			// The partition moved to another member (or was revoked):
			// whatever it left is resolved by its next owner. When the
			// run itself was stopped (Ctrl-C), the caller says so once.
			if parent.Err() != nil {
				p.log.Debug("partition stopped", "partition", part.Key(), "reason", err)
				return nil
			}
			p.log.Info("partition released", "partition", part.Key(), "reason", err)
			return nil
		}
		return err
	})
	cancel()
	cwg.Wait()
	if err == nil && parent.Err() != nil {
		return parent.Err()
	}
	return err
}

// memoryBudgeter is a Source with buffers of its own (Kafka): it takes a
// share of Config.MemoryBudget (offered, unless configured on the source)
// and returns what it took.
type memoryBudgeter interface {
	takeMemoryBudget(offer int64) int64
}

// halter is a Partition that can stop fetching (Kafka) while it stays
// assigned.
type halter interface {
	halt()
}

// pausePartition keeps a failed partition assigned, without a worker and
// without fetching, until its context ends (revoked, lost, the end of the
// run), and reports it on Health and in the partition-paused metric: one
// partition's error does not stop the others, nor, by stopping this
// member, cascade through the group as each next owner fails in turn.
func (p *pipeline) pausePartition(ctx context.Context, part Partition, err error) {
	key := part.Key()
	p.log.Error("partition paused: its worker failed; the other partitions go on (it is retried when the group moves it or the member restarts)",
		"partition", key, "err", err)
	p.cfg.Health.pause(key, err)
	p.metrics.PartitionPaused.WithLabelValues(key).Set(1)
	if h, ok := part.(halter); ok {
		h.halt()
	}
	<-ctx.Done()
	p.metrics.PartitionPaused.DeleteLabelValues(key)
	p.cfg.Health.resume(key)
}

// hasDeadLetterSink reports whether records that do not fit the table
// become dead letters (a file or a table) rather than stopping the run.
func (p *pipeline) hasDeadLetterSink() bool {
	return p.cfg.DeadLetters != nil || p.cfg.DeadLetterTable != ""
}
