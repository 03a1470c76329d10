package jobs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bqstore/bqstore/internal/filter"
	"github.com/bqstore/bqstore/internal/sql"
)

// Child jobs. BigQuery runs each statement of a script (a query of
// several statements) as a child job of the script's job: the child has
// statistics.parentJobId and statistics.scriptStatistics (evaluationKind
// STATEMENT and the statement's stack frame: its position and text), its
// own statistics and, for a SELECT, its own result, which getQueryResults
// reads (bq query prints each statement's result that way); jobs.list
// lists them only when asked with parentJobId, and jobs.delete of the
// script deletes them (a child cannot be deleted on its own).
//
// Here the script's goroutine records each child DONE as its statement
// ends (logged like any job, so they survive a restart). A SELECT that
// is not the script's result writes its rows to the child's own
// anonymous table; the result statement's child names the script's
// result table (recorded once the script committed it), which the
// script's job owns: a job drops only the anonymous table named after
// itself.

// ScriptFrame is a child job's statement in its script
// (ScriptStackFrame): one-based lines and columns of its first and last
// characters (the ';' included when there is one), and its text.
type ScriptFrame struct {
	StartLine   int    `json:"startLine"`
	StartColumn int    `json:"startColumn"`
	EndLine     int    `json:"endLine"`
	EndColumn   int    `json:"endColumn"`
	Text        string `json:"text"`
}

// ErrChildJob: jobs.delete of a child job, which BigQuery refuses
// ("Direct deletion of the metadata of child jobs is not allowed").
var ErrChildJob = fmt.Errorf("jobs: a child job is deleted with its parent")

// childID is the id of statement i (from 0) of script job project/id, in
// BigQuery's shape: "script_job_", 32 hex digits, "_" and i.
func childID(project, id string, i int) string {
	h := sha1.Sum([]byte("bqstore script child\x00" + project + "\x00" + id))
	return fmt.Sprintf("script_job_%s_%d", hex.EncodeToString(h[:16]), i)
}

// script is what a script's job keeps while it runs to record its
// children (Query.script; nil for a lone statement).
type script struct {
	project, id, location string
	frames                []ScriptFrame
	// key is the child of the result statement, recorded once the
	// result is committed (execute); nil until it ran.
	key *Job
}

// frameScanned counts the bytes of scripts scriptFrames reads to place
// its frames' lines and columns (a test checks it is linear).
var frameScanned atomic.Int64

// scriptFrames is the frames of the statements sts of src: a statement's
// text runs from its first token to its ';' (as written, comments
// included), or to its last token when it has no ';'. The statements
// are in order: one cursor walks src once to place them all.
func scriptFrames(src string, sts []*sql.Statement) []ScriptFrame {
	out := make([]ScriptFrame, len(sts))
	c := textCursor{src: src, line: 1, col: 1}
	for i, st := range sts {
		end := st.End + 1 // past the ';'
		if st.End >= len(src) {
			end = len(src)
			// The last statement: up to its last token (not the
			// comments and spaces after it). It lexed when parsed.
			if toks, err := filter.TokensAt(src[:st.Pos], src[st.Pos:st.End]); err == nil && len(toks) > 1 {
				end = toks[len(toks)-2].End
			}
		}
		out[i] = ScriptFrame{Text: src[st.Pos:end]}
		out[i].StartLine, out[i].StartColumn = c.at(st.Pos)
		out[i].EndLine, out[i].EndColumn = c.at(max(st.Pos, end-1))
	}
	frameScanned.Add(int64(c.pos))
	return out
}

// textCursor walks src forward keeping the one-based line and column of
// byte offset pos: a multi-byte character is one column, and a tab moves
// to the next column 8k+1 (ScriptStackFrame's rules).
type textCursor struct {
	src            string
	pos, line, col int
}

// at is the line and column of byte offset p, at or after the cursor's
// last. A p inside a multi-byte character counts its bytes before p one
// column each (as ranging over src[:p] would) and leaves the cursor at
// the character's start.
func (c *textCursor) at(p int) (line, col int) {
	for c.pos < p {
		r, size := utf8.DecodeRuneInString(c.src[c.pos:])
		if c.pos+size > p {
			return c.line, c.col + p - c.pos
		}
		c.pos += size
		switch r {
		case '\n':
			c.line, c.col = c.line+1, 1
		case '\t':
			c.col = (c.col-1)/8*8 + 9
		default:
			c.col++
		}
	}
	return c.line, c.col
}

// newChild is the child job of statement i of the script, started at
// start, with its configuration taken from the script's q.
func (sc *script) newChild(q Query, i int, start, end time.Time, stats Stats, err error) Job {
	cq := Query{SQL: sc.frames[i].Text, DefaultProject: q.DefaultProject, DefaultDataset: q.DefaultDataset,
		MaxBytesBilled: q.MaxBytesBilled, ParameterMode: q.ParameterMode, Parameters: q.Parameters,
		Priority: q.Priority, Labels: q.Labels}
	frame := sc.frames[i]
	stats.NumChildJobs = 0
	if t := stats.DDLTargetTable; t != nil {
		pub := q.publicRef(*t)
		stats.DDLTargetTable = &pub
	}
	return Job{Project: sc.project, ID: childID(sc.project, sc.id, i), Location: sc.location, Query: cq,
		State: StateDone, Created: start, Started: start, End: end, Err: err,
		BytesProcessed: stats.BytesProcessed, Stats: stats, Parent: sc.id, Frame: &frame}
}

// addChild records the child job c (DONE), with its rows rec when there
// is no engine: logged, then visible. A child whose id is taken (a job
// the user named so) is not recorded.
func (s *Store) addChild(c Job, rec arrow.RecordBatch) {
	if err := s.persist(&c); err != nil {
		s.log.Error("jobs: log a child job", "job", c.ID, "err", err)
	}
	e := &entry{job: c, done: make(chan struct{}), rec: rec}
	close(e.done)
	k := key{c.Project, c.ID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.jobs[k]; ok {
		s.log.Error("jobs: a child job's id is taken", "job", c.ID, "parent", c.Parent)
		return
	}
	s.mu.jobs[k] = e
}

// childrenLocked is the children of job project/id in the table.
// REQUIRES: s.mu held.
func (s *Store) childrenLocked(project, id string) []Job {
	var out []Job
	for k, e := range s.mu.jobs {
		if k.project == project && e.job.Parent == id {
			out = append(out, e.job)
		}
	}
	return out
}

// referenced is the tables a statement's query read, named as they
// exist (a temporary table in the job's hidden dataset).
func referenced(j Job, q Query, res *sql.Result) []TableRef {
	if res == nil {
		return nil
	}
	var out []TableRef
	for _, n := range res.Tables {
		r, ok := q.temp(n)
		if ok {
			r = q.publicRef(r) // by its name, in the hidden dataset
		} else {
			r = resolveRef(j, n)
		}
		out = append(out, r)
	}
	return out
}

// childSink is the sink of a script's SELECT that is not its result:
// the child's own anonymous table (nil without an engine: the rows are
// then held in the result).
func (s *Store) childSink(c *Job) *resultSink {
	if s.opts.DB == nil {
		return nil
	}
	return s.newResultSink(c)
}

// placeholder is the child of statement i, started at start, as its
// result sink names it (its anonymous table, expiring with it).
func (sc *script) placeholder(i int, start time.Time) *Job {
	return &Job{Project: sc.project, ID: childID(sc.project, sc.id, i), Location: sc.location, Created: start}
}

// recordChild records statement i of script sc as a child job, once it
// ran from start (err its error, one its statistics, res its result):
// a SELECT's rows are committed to the child's table (csink; the result
// statement's (key) are the script's result: execute records that child
// once it committed them).
func (s *Store) recordChild(ctx context.Context, sc *script, q Query, i int, key bool, start time.Time, one Stats, res *sql.Result, csink *resultSink, err error) {
	if err != nil {
		csink.abort()
		s.addChild(sc.newChild(q, i, start, s.opts.Clock(), one, err), nil)
		return
	}
	c := sc.newChild(q, i, start, time.Time{}, one, nil)
	var rec arrow.RecordBatch
	if res != nil {
		c.Referenced = referenced(c, q, res)
		c.Schema, c.NumRows = res.Schema, res.NumRows
		switch {
		case key:
			c.End = s.opts.Clock()
			sc.key = &c
			return
		case csink != nil:
			if cerr := s.commitChild(ctx, csink, res); cerr != nil {
				csink.abort()
				s.log.Error("jobs: write a script statement's result", "job", c.ID, "err", cerr)
				c.Schema, c.NumRows = nil, 0
				break
			}
			c.Destination = csink.ref
		default:
			if rec, err = res.Record(); err != nil {
				s.log.Error("jobs: hold a script statement's result", "job", c.ID, "err", err)
				c.Schema, c.NumRows, rec = nil, 0, nil
			}
		}
	}
	c.End = s.opts.Clock()
	s.addChild(c, rec)
}

// commitChild commits the rows of a script's SELECT to its child's table.
func (s *Store) commitChild(ctx context.Context, csink *resultSink, res *sql.Result) error {
	if !csink.began() {
		if err := csink.Begin(ctx, res.Schema); err != nil {
			return err
		}
		if err := csink.Write(ctx, res.Rows); err != nil {
			return err
		}
	}
	return csink.commit(ctx)
}

// finishScript records the result statement's child of a script job
// (sc.key, if it ran) once the job is over: it names the script's
// result table (dest) when the job succeeded; when it failed after that
// statement, the child keeps no rows.
func (s *Store) finishScript(sc *script, dest TableRef, rec arrow.RecordBatch, ok bool) {
	if sc == nil || sc.key == nil {
		return
	}
	c := *sc.key
	sc.key = nil
	if ok {
		c.Destination = dest
	} else {
		c.Schema, c.NumRows, rec = nil, 0, nil
	}
	s.addChild(c, rec)
}
