package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"

	"github.com/bqstore/bqstore/internal/testkit"
)

// catRow is one insertAll row: column id only (the others are NULLABLE).
type catRow int64

func (r catRow) Save() (map[string]bigquery.Value, string, error) {
	return map[string]bigquery.Value{"id": int64(r)}, "", nil
}

// catLedger is what the server acknowledged: per table, the rows and
// the columns of the schema; and the tables whose delete it acknowledged.
type catLedger struct {
	mu      sync.Mutex
	rows    map[string]int
	cols    map[string]int
	deleted map[string]bool
	// deleting: a delete was sent, its outcome unknown until it is
	// acknowledged (the server may have died after doing it).
	deleting map[string]bool
}

// wideSchema is a schema of n columns with descriptions, so that a burst
// of creates outgrows the catalog log's checkpoint threshold (1 MiB) and
// the kill can land in a checkpoint too.
func wideSchema(n int) bigquery.Schema {
	s := bigquery.Schema{{Name: "id", Type: bigquery.IntegerFieldType}}
	for i := 1; i < n; i++ {
		s = append(s, &bigquery.FieldSchema{Name: fmt.Sprintf("c%d", i), Type: bigquery.StringFieldType,
			Description: fmt.Sprintf("column %d of a wide table, described at some length to make the record large", i)})
	}
	return s
}

// TestCatalogBurstKill9 attacks the start-up reconciliation (which drops
// the engine tables the catalog deleted and quarantines those it does not
// know): writers create tables,
// insert rows, widen schemas and delete tables concurrently on a child
// server, which is killed with SIGKILL at a random moment, several times;
// after each restart every table whose creation was acknowledged (and
// not its delete) is there with at least its acknowledged rows and
// columns, and no table whose delete was acknowledged is.
//
//	BQSTORE_CATKILL_SEED=N go test -run TestCatalogBurstKill9 -v ./internal/server
func TestCatalogBurstKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child servers")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BQSTORE_CATKILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (BQSTORE_CATKILL_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	l := &catLedger{rows: map[string]int{}, cols: map[string]int{}, deleted: map[string]bool{}, deleting: map[string]bool{}}
	const cycles, writers = 4, 3
	for cycle := 0; cycle <= cycles; cycle++ {
		c := testkit.StartChild(t, dir)
		bq, err := bigquery.NewClient(ctx, "local", testkit.RESTOptions(c.HTTPAddr)...)
		if err != nil {
			t.Fatal(err)
		}
		if cycle == 0 {
			if err := bq.Dataset("d").Create(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		verifyCatalogBurst(t, ctx, bq, l, cycle)
		// A kill between a delete's catalog record and the engine's
		// drop leaves a tombstoned table, whose drop start-up
		// finishes: no engine table may be unknown to the catalog.
		if log := c.Log(); strings.Contains(log, "not in the catalog") {
			t.Fatalf("cycle %d: start-up found engine tables the catalog does not know:\n%s", cycle, log)
		}
		if n := strings.Count(c.Log(), "finished the drop of a deleted table"); n > 0 {
			t.Logf("cycle %d: start-up finished %d interrupted drops", cycle, n)
		}
		if cycle == cycles {
			bq.Close()
			c.Kill()
			// Whether the bursts reached checkpoints (CATALOG holds
			// tables: more than a few hundred bytes).
			var sizes [2]int64
			for i, f := range []string{"CATALOG", "CATALOG.log"} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err == nil {
					sizes[i] = fi.Size()
				}
			}
			t.Logf("CATALOG %d bytes, CATALOG.log %d bytes", sizes[0], sizes[1])
			break
		}
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for w := range writers {
			wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				catalogBurst(wctx, bq, l, fmt.Sprintf("c%dw%d", cycle, w), wrng)
			}()
		}
		time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond)
		c.Kill()
		stop()
		wg.Wait()
		bq.Close()
	}
}

// catalogBurst creates tables named prefix_N until ctx ends or a call
// fails (the server died): each gets rows, maybe a wider schema, and
// maybe an earlier one is deleted.
func catalogBurst(ctx context.Context, bq *bigquery.Client, l *catLedger, prefix string, rng *rand.Rand) {
	ds := bq.Dataset("d")
	var mine []string
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("%s_%d", prefix, i)
		n := 2 + rng.IntN(3)
		if rng.IntN(2) == 0 {
			n = 300
		}
		if err := ds.Table(name).Create(ctx, &bigquery.TableMetadata{Schema: wideSchema(n)}); err != nil {
			return
		}
		l.mu.Lock()
		l.rows[name], l.cols[name] = 0, n
		l.mu.Unlock()
		mine = append(mine, name)
		rows := make([]catRow, 1+rng.IntN(20))
		for j := range rows {
			rows[j] = catRow(j)
		}
		if err := ds.Table(name).Inserter().Put(ctx, rows); err != nil {
			return
		}
		l.mu.Lock()
		l.rows[name] += len(rows)
		l.mu.Unlock()
		if rng.IntN(2) == 0 {
			wider := append(wideSchema(n), &bigquery.FieldSchema{Name: "added", Type: bigquery.StringFieldType})
			if _, err := ds.Table(name).Update(ctx, bigquery.TableMetadataToUpdate{Schema: wider, Description: "widened"}, ""); err != nil {
				return
			}
			l.mu.Lock()
			l.cols[name] = n + 1
			l.mu.Unlock()
		}
		if len(mine) > 1 && rng.IntN(4) == 0 {
			k := rng.IntN(len(mine) - 1)
			victim := mine[k]
			mine = append(mine[:k], mine[k+1:]...)
			l.mu.Lock()
			l.deleting[victim] = true
			l.mu.Unlock()
			if err := ds.Table(victim).Delete(ctx); err != nil {
				return
			}
			l.mu.Lock()
			l.deleted[victim] = true
			l.mu.Unlock()
		}
	}
}

func verifyCatalogBurst(t *testing.T, ctx context.Context, bq *bigquery.Client, l *catLedger, cycle int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	ds := bq.Dataset("d")
	checked := 0
	for name, rows := range l.rows {
		md, err := ds.Table(name).Metadata(ctx)
		if l.deleted[name] {
			if err == nil {
				t.Fatalf("cycle %d: table %s, whose delete was acknowledged, is back", cycle, name)
			}
			continue
		}
		if err != nil && l.deleting[name] {
			// A delete whose outcome was unknown: done.
			l.deleted[name] = true
			continue
		}
		delete(l.deleting, name)
		if err != nil {
			t.Fatalf("cycle %d: table %s, whose creation was acknowledged, is lost: %v", cycle, name, err)
		}
		if int(md.NumRows) < rows {
			t.Fatalf("cycle %d: table %s has %d rows, %d were acknowledged", cycle, name, md.NumRows, rows)
		}
		if len(md.Schema) < l.cols[name] {
			t.Fatalf("cycle %d: table %s has %d columns, %d were acknowledged", cycle, name, len(md.Schema), l.cols[name])
		}
		checked++
	}
	t.Logf("cycle %d: %d acknowledged tables there with their rows and columns, %d deleted", cycle, checked, len(l.deleted))
}
