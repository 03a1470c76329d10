// Drives Google's official Node.js BigQuery REST client
// (@google-cloud/bigquery) against bqstore serve: the dataset and table
// calls a new user makes first. Prints a JSON summary on stdout; any
// failure exits non-zero with the error on stderr. Driven by
// internal/e2e TestNodeREST.
'use strict';

const {BigQuery} = require('@google-cloud/bigquery');
const {OAuth2Client} = require('google-auth-library');

async function main() {
  const addr = process.env.BQSTORE_HTTP_ADDR;
  const project = process.env.BQSTORE_PROJECT || 'local';
  // Any bearer token: bqstore serve without --auth-tokens accepts it.
  const authClient = new OAuth2Client();
  authClient.setCredentials({access_token: 'test', expiry_date: Date.now() + 3600e3});
  const bigquery = new BigQuery({projectId: project, apiEndpoint: `http://${addr}`, authClient});

  const out = {};
  // dataset.create() sends the projectId inside the dataset body.
  const [dataset] = await bigquery.dataset('node_ds').create();
  out.datasetId = dataset.id;
  const [ds2] = await bigquery.createDataset('node_ds2', {description: 'two'});
  const [dsMeta] = await ds2.getMetadata();
  out.datasetDescription = dsMeta.description;
  const [datasets] = await bigquery.getDatasets();
  out.datasets = datasets.map(d => d.id).sort();

  const [table] = await dataset.createTable('t', {
    schema: 'id:integer,name:string',
    description: 'created by node',
  });
  out.tableId = table.id;
  const [tMeta] = await table.getMetadata();
  out.schema = tMeta.schema.fields.map(f => `${f.name}:${f.type}`);
  await table.setMetadata({description: 'patched by node'});
  const [tMeta2] = await table.getMetadata();
  out.tableDescription = tMeta2.description;
  const [tables] = await dataset.getTables();
  out.tables = tables.map(t => t.id);
  const [rows] = await table.getRows();
  out.rowsBefore = rows.length;

  // tabledata.insertAll. Good rows (the client adds an insertId to each).
  await table.insert([{id: 1, name: 'one'}, {id: 2, name: 'two'}, {id: 3}]);
  // A bad row: PartialFailureError with each row's reason; the good row
  // of the request is "stopped" and nothing is written.
  try {
    await table.insert([{id: 10, name: 'ten'}, {id: 'eleven'}], {partialRetries: 0});
    out.badInsert = 'no error';
  } catch (err) {
    out.badInsert = err.name;
    out.badReasons = err.errors.map(e => e.errors.map(x => x.reason).join(','));
    out.badMessage = err.errors[1].errors[0].message;
  }
  // insertId de-duplication: the same raw row sent twice is written once.
  const raw = {insertId: 'node-dedup-1', json: {id: 4, name: 'four'}};
  await table.insert(raw, {raw: true});
  await table.insert(raw, {raw: true});
  // skipInvalidRows writes the good rows of a request with a bad one.
  try {
    await table.insert([{id: 5}, {id: 6, nope: true}], {skipInvalidRows: true, partialRetries: 0});
  } catch (err) {
    out.skipReasons = err.errors.map(e => e.errors.map(x => x.reason).join(','));
  }
  // getRows through every page.
  const ids = [];
  let pages = 0;
  let query = {maxResults: 2, autoPaginate: false};
  while (query) {
    const [page, next] = await table.getRows(query);
    pages++;
    for (const r of page) ids.push(Number(r.id));
    query = next;
  }
  out.rows = ids.sort((a, b) => a - b);
  out.pages = pages;

  await table.delete();
  await dataset.delete({force: true});
  await ds2.delete();
  const [after] = await bigquery.getDatasets();
  out.datasetsAfter = after.length;
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch(err => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  if (err && err.response && err.response.body) process.stderr.write(String(err.response.body) + '\n');
  process.exit(1);
});
