package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// storageErrorCode returns the StorageError code attached to a gRPC status,
// or STORAGE_ERROR_CODE_UNSPECIFIED.
func storageErrorCode(err error) storagepb.StorageError_StorageErrorCode {
	st, ok := status.FromError(err)
	if !ok {
		return storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED
	}
	for _, d := range st.Details() {
		if se, ok := d.(*storagepb.StorageError); ok {
			return se.GetCode()
		}
	}
	return storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED
}

// streamID returns the last element of a stream name.
func streamID(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}

// streamName joins a table name and a stream id.
func streamName(table, id string) string {
	return table + "/streams/" + id
}

// retry runs op until it succeeds, fails with a non-retryable error, or ctx
// ends, waiting with backoff between attempts.
func (p *pipeline) retry(ctx context.Context, what string, op func(ctx context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil || !retryable(err) {
			return err
		}
		p.metrics.Retries.WithLabelValues(status.Code(err).String()).Inc()
		p.log.Debug("retrying", "op", what, "attempt", attempt, "err", err)
		if werr := p.cfg.Backoff.Wait(ctx, attempt); werr != nil {
			return fmt.Errorf("%s: %w (last error: %v)", what, werr, err)
		}
	}
}

// createStreamOn creates a PENDING stream of table under the
// CreateWriteStream rate limit.
func (p *pipeline) createStreamOn(ctx context.Context, table string) (*storagepb.WriteStream, error) {
	var ws *storagepb.WriteStream
	err := p.retry(ctx, "CreateWriteStream", func(ctx context.Context) error {
		if err := p.createLimit.Wait(ctx); err != nil {
			return err
		}
		var err error
		ws, err = p.cfg.Client.CreateWriteStream(ctx, &storagepb.CreateWriteStreamRequest{
			Parent:      table,
			WriteStream: &storagepb.WriteStream{Type: storagepb.WriteStream_PENDING},
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: CreateWriteStream on %s: %w", table, err)
	}
	if ws.GetTableSchema() == nil {
		// Some servers answer with the BASIC view; ask for the schema.
		full, err := p.getStream(ctx, ws.GetName(), storagepb.WriteStreamView_FULL)
		if err != nil {
			return nil, err
		}
		ws.TableSchema = full.GetTableSchema()
	}
	if ws.GetTableSchema() == nil {
		return nil, fmt.Errorf("ingest: %s: the server returned no table schema", ws.GetName())
	}
	p.metrics.ActiveStreams.Inc()
	return ws, nil
}

func (p *pipeline) getStream(ctx context.Context, name string, view storagepb.WriteStreamView) (*storagepb.WriteStream, error) {
	var ws *storagepb.WriteStream
	err := p.retry(ctx, "GetWriteStream", func(ctx context.Context) error {
		var err error
		ws, err = p.cfg.Client.GetWriteStream(ctx, &storagepb.GetWriteStreamRequest{Name: name, View: view})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: GetWriteStream %s: %w", name, err)
	}
	return ws, nil
}

// finalize finalizes a stream and returns its row count. An already
// finalized stream is not an error (a recovery may repeat a finalize).
func (p *pipeline) finalize(ctx context.Context, name string) (int64, error) {
	var n int64
	err := p.retry(ctx, "FinalizeWriteStream", func(ctx context.Context) error {
		resp, err := p.cfg.Client.FinalizeWriteStream(ctx, &storagepb.FinalizeWriteStreamRequest{Name: name})
		if err != nil {
			return err
		}
		n = resp.GetRowCount()
		return nil
	})
	if err != nil && storageErrorCode(err) == storagepb.StorageError_STREAM_FINALIZED {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ingest: FinalizeWriteStream %s: %w", name, err)
	}
	return n, nil
}

// errFailClosed marks states that must not be guessed (crash table row 16).
var errFailClosed = errors.New("ingest: sealed stream not found, commit outcome unknown: partition paused (reconcile before resuming)")

func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound ||
		storageErrorCode(err) == storagepb.StorageError_STREAM_NOT_FOUND
}
