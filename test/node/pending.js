// Writes rows to a PENDING stream of a bqstore table through Google's
// official Node.js client (@google-cloud/bigquery-storage), finalizes and
// batch-commits it, and prints one JSON line with what happened.
// Driven by internal/e2e (TestNodePendingWriter); the Go side checks the
// table contents through the Read API.
//
// env: BQSTORE_GRPC_ADDR (host:port), BQSTORE_TABLE
// (projects/p/datasets/d/tables/t), BQSTORE_ROWS (rows per append),
// BQSTORE_APPENDS (number of appends).
'use strict';

const grpc = require('@grpc/grpc-js');
const {managedwriter, adapt} = require('@google-cloud/bigquery-storage');

async function main() {
  const [host, port] = process.env.BQSTORE_GRPC_ADDR.split(':');
  const table = process.env.BQSTORE_TABLE;
  const perAppend = Number(process.env.BQSTORE_ROWS || '10');
  const appends = Number(process.env.BQSTORE_APPENDS || '3');
  const client = new managedwriter.WriterClient({
    projectId: table.split('/')[1],
    apiEndpoint: host,
    port: Number(port),
    sslCreds: grpc.credentials.createInsecure(),
  });
  try {
    const connection = await client.createStreamConnection({
      streamType: managedwriter.PendingStream,
      destinationTable: table,
    });
    const streamId = connection.getStreamId();
    const ws = await client.getWriteStream({streamId, view: 'FULL'});
    const descriptor = adapt.convertStorageSchemaToProto2Descriptor(ws.tableSchema, 'root');
    const writer = new managedwriter.JSONWriter({connection, protoDescriptor: descriptor});

    const offsets = [];
    let next = 0;
    const pending = [];
    for (let a = 0; a < appends; a++) {
      const rows = [];
      for (let i = 0; i < perAppend; i++) {
        const id = next + i;
        rows.push({id: id, name: `row-${id}`, score: id / 2});
      }
      pending.push(writer.appendRows(rows, next));
      next += perAppend;
    }
    for (const pw of pending) {
      const res = await pw.getResult();
      if (res.error) {
        throw new Error(`append error: ${JSON.stringify(res.error)}`);
      }
      offsets.push(Number(res.appendResult.offset.value));
    }

    // A retry of the first append must be refused as already written.
    const dup = await writer.appendRows([{id: 0, name: 'dup', score: 0}], 0).getResult();
    const dupCode = dup.error ? dup.error.code : 0;

    const fin = await connection.finalize();
    const commit = await client.batchCommitWriteStream({parent: table, writeStreams: [streamId]});
    writer.close();
    console.log(JSON.stringify({
      stream: streamId,
      offsets,
      duplicateCode: dupCode,
      rowCount: Number(fin.rowCount),
      committed: commit.commitTime != null,
      streamErrors: (commit.streamErrors || []).length,
    }));
  } finally {
    client.close();
  }
}

main().catch(err => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
