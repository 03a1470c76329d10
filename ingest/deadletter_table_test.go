package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/iterator"

	"github.com/bqstore/bqstore/ingest"
	"github.com/bqstore/bqstore/internal/testkit"
)

// deadLetterTable creates a dead-letter table and returns its Storage API name.
func (e *env) deadLetterTable(t *testing.T, name string) string {
	t.Helper()
	schema := bigquery.Schema{
		{Name: "source", Type: bigquery.StringFieldType},
		{Name: "partition", Type: bigquery.IntegerFieldType},
		{Name: "offset", Type: bigquery.IntegerFieldType},
		{Name: "key", Type: bigquery.BytesFieldType},
		{Name: "raw", Type: bigquery.BytesFieldType},
		{Name: "error", Type: bigquery.StringFieldType},
		{Name: "time", Type: bigquery.TimestampFieldType},
	}
	if err := e.bq.Dataset("d").Table(name).Create(context.Background(), &bigquery.TableMetadata{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("projects/%s/datasets/d/tables/%s", project, name)
}

// readDeadLetters reads a dead-letter table and counts its rows by
// "source/partition@offset", checking each row's raw record and reason.
func (e *env) readDeadLetters(t *testing.T, table, wantRaw string) map[string]int {
	t.Helper()
	name := table[strings.LastIndexByte(table, '/')+1:]
	it := e.bq.Dataset("d").Table(name).Read(context.Background())
	got := map[string]int{}
	for {
		var row []bigquery.Value
		err := testkit.NextRow(it, &row)
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		if raw, _ := row[4].([]byte); !strings.Contains(string(raw), wantRaw) || row[5] == nil || row[6] == nil {
			t.Fatalf("dead-letter row %v: want raw %q, an error and a time", row, wantRaw)
		}
		got[fmt.Sprintf("%v/%v@%v", row[0], row[1], row[2])]++
	}
	return got
}

// checkDeadLettersOnce requires want distinct dead letters, each once.
func checkDeadLettersOnce(t *testing.T, got map[string]int, want int) {
	t.Helper()
	dup := 0
	for k, c := range got {
		if c != 1 {
			dup++
			t.Logf("dead letter %s: %d rows", k, c)
		}
	}
	if dup > 0 || len(got) != want {
		t.Fatalf("dead-letter table holds %d distinct dead letters (%d more than once), want %d once each", len(got), dup, want)
	}
}

// TestDeadLetterTableKafkaCrashTable: Kafka dead letters go to a table,
// in a stream the batch's seal names next to the data stream. A crash at
// each point of batch 2 (between the data table's commit and the
// dead-letter table's too), then a restart: every record once in the
// table, every poison record once in the dead-letter table.
func TestDeadLetterTableKafkaCrashTable(t *testing.T) {
	e := newEnv(t)
	const n = 200
	k := newKafka(t, 1, n, 1) // a poison record after every record
	points := []ingest.Point{ingest.AfterFinalize, ingest.AfterSeal, ingest.BetweenCommits, ingest.AfterCommit, ingest.AfterDone}
	for i, p := range points {
		t.Run("point="+string(p), func(t *testing.T) {
			table := e.table(t, fmt.Sprintf("dlt_kafka_%d", i))
			dlt := e.deadLetterTable(t, fmt.Sprintf("dlt_kafka_dead_%d", i))
			group := fmt.Sprintf("dlt%d", i)
			cfg, _ := k.config(e, table, group, nil)
			cfg.DeadLetterTable = dlt
			cfg.Hooks = &crashAt{point: p, batch: 2}
			if err := ingest.Run(context.Background(), cfg); !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the injected crash", err)
			}
			cfg, _ = k.config(e, table, group, nil)
			cfg.DeadLetterTable = dlt
			if err := runUntilCommitted(t, k, cfg, group); err != nil {
				t.Fatalf("restart: %v", err)
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
			got := e.readDeadLetters(t, dlt, `{"id":[]}`)
			checkDeadLettersOnce(t, got, n)
			if got["kafka:events/0@1"] != 1 {
				t.Fatalf("dead letters %v: want kafka:events/0@1 (the first poison record's offset)", got)
			}
		})
	}
}

// TestDeadLetterTableFileCrashTable is the same for a file source.
func TestDeadLetterTableFileCrashTable(t *testing.T) {
	e := newEnv(t)
	const n = 200
	src, bad := writeEvents(t, n, 30)
	points := append([]ingest.Point{ingest.BetweenCommits}, ingest.Points...)
	for i, p := range points {
		t.Run("point="+string(p), func(t *testing.T) {
			table := e.table(t, fmt.Sprintf("dlt_file_%d", i))
			dlt := e.deadLetterTable(t, fmt.Sprintf("dlt_file_dead_%d", i))
			dir := t.TempDir()
			r := run{e: e, table: table, source: src, stateDir: filepath.Join(dir, "state"),
				deadLetter: filepath.Join(dir, "unused.ndjson"), hooks: &crashAt{point: p, batch: 2},
				mutate: func(c *ingest.Config) { c.DeadLetters, c.DeadLetterTable = nil, dlt }}
			if err := r.do(t); !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v, want the injected crash", err)
			}
			r.hooks = nil
			if err := r.do(t); err != nil {
				t.Fatalf("restart: %v", err)
			}
			checkExactlyOnce(t, e.readIDs(t, table), n)
			checkDeadLettersOnce(t, e.readDeadLetters(t, dlt, `"id":"not-a-number-`), bad)
		})
	}
}
