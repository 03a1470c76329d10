// Follows the README's recipe for Node.js against `bqstore serve
// --tls-cert ... --tls-key ... --auth-tokens ...`: the CA through the
// runtime's usual settings (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH for grpc-js,
// NODE_EXTRA_CA_CERTS for HTTPS, both set by the caller before node
// starts) and the token as an OAuth access token (google-auth-library's
// OAuth2Client passed as authClient), with no other option. Writes rows
// through REST (tabledata.insertAll) and the Storage Write API (the
// default stream), reads them back, and records what a wrong token and a
// project the token does not list get. Prints one JSON line; any other
// failure exits non-zero with the error on stderr. Driven by
// internal/e2e TestNodeTLSToken.
//
// env: BQSTORE_GRPC_ADDR, BQSTORE_HTTP_ADDR (host:port), BQSTORE_PROJECT,
// BQSTORE_TOKEN (a token of the server's --auth-tokens file for
// BQSTORE_PROJECT only).
'use strict';

const {BigQuery} = require('@google-cloud/bigquery');
const {managedwriter, adapt} = require('@google-cloud/bigquery-storage');
const {OAuth2Client} = require('google-auth-library');

// A fixed access token: without an expiry_date google-auth-library never
// tries to refresh it.
function tokenClient(token) {
  const c = new OAuth2Client();
  c.setCredentials({access_token: token});
  return c;
}

// The recipe: endpoints and an authClient; TLS trust from the environment.
function restClient(project, token) {
  return new BigQuery({projectId: project, apiEndpoint: `https://${process.env.BQSTORE_HTTP_ADDR}`, authClient: tokenClient(token)});
}

function writerClient(project, token) {
  const [host, port] = process.env.BQSTORE_GRPC_ADDR.split(':');
  return new managedwriter.WriterClient({projectId: project, apiEndpoint: host, port: Number(port), authClient: tokenClient(token)});
}

// restCode is the HTTP status of a failed REST call (0: it succeeded).
async function restCode(fn) {
  try {
    await fn();
    return 0;
  } catch (err) {
    return err.code || -1;
  }
}

// grpcCode is the gRPC code of a failed Storage API call (0: it
// succeeded).
async function grpcCode(client, table) {
  try {
    await client.getWriteStream({streamId: `${table}/streams/_default`, view: 'FULL'});
    return 0;
  } catch (err) {
    return err.code === undefined ? -1 : err.code;
  }
}

async function main() {
  const project = process.env.BQSTORE_PROJECT;
  const token = process.env.BQSTORE_TOKEN;
  const out = {};

  const bq = restClient(project, token);
  const [dataset] = await bq.createDataset('node_tls');
  const [table] = await dataset.createTable('t', {schema: 'id:integer,name:string'});
  await table.insert([{id: 1, name: 'rest'}, {id: 2, name: 'rest'}]);

  const path = `projects/${project}/datasets/node_tls/tables/t`;
  const client = writerClient(project, token);
  try {
    const connection = await client.createStreamConnection({streamId: managedwriter.DefaultStream, destinationTable: path});
    const ws = await client.getWriteStream({streamId: connection.getStreamId(), view: 'FULL'});
    const descriptor = adapt.convertStorageSchemaToProto2Descriptor(ws.tableSchema, 'root');
    const writer = new managedwriter.JSONWriter({connection, protoDescriptor: descriptor});
    const res = await writer.appendRows([{id: 3, name: 'grpc'}, {id: 4, name: 'grpc'}, {id: 5, name: 'grpc'}]).getResult();
    if (res.error) {
      throw new Error(`append error: ${JSON.stringify(res.error)}`);
    }
    writer.close();
  } finally {
    client.close();
  }

  const [rows] = await table.getRows();
  out.rows = rows.map(r => `${r.id}:${r.name}`).sort();

  // A wrong token: 401 / UNAUTHENTICATED (16); a project the token does
  // not list: 403 / PERMISSION_DENIED (7).
  out.restWrongToken = await restCode(() => restClient(project, 'wrong-token').getDatasets());
  out.restOtherProject = await restCode(() => restClient('other-project', token).getDatasets());
  for (const [key, p, tok] of [['grpcWrongToken', project, 'wrong-token'], ['grpcOtherProject', 'other-project', token]]) {
    const c = writerClient(p, tok);
    try {
      out[key] = await grpcCode(c, `projects/${p}/datasets/node_tls/tables/t`);
    } finally {
      c.close();
    }
  }
  await dataset.delete({force: true});
  console.log(JSON.stringify(out));
}

main().catch(err => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
