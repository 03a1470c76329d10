// Drives Google's official Node.js BigQuery REST client
// (@google-cloud/bigquery) against bqstore serve: bigquery.query() and
// createQueryJob() + job.getQueryResults(), with named and positional
// parameters, over a table the Go side filled through the Storage Write
// API (BQSTORE_TABLE = dataset.table, ids 1..N, name "row", score id/2).
// Prints a JSON summary on stdout; any failure exits non-zero with the
// error on stderr. Driven by internal/e2e TestNodeQuery.
'use strict';

const {BigQuery} = require('@google-cloud/bigquery');
const {OAuth2Client} = require('google-auth-library');

async function main() {
  const addr = process.env.BQSTORE_HTTP_ADDR;
  const project = process.env.BQSTORE_PROJECT || 'local';
  const table = process.env.BQSTORE_TABLE;
  const authClient = new OAuth2Client();
  authClient.setCredentials({access_token: 'test', expiry_date: Date.now() + 3600e3});
  const bigquery = new BigQuery({projectId: project, apiEndpoint: `http://${addr}`, authClient});

  const out = {};
  // bigquery.query(): jobs.query, named parameters from an object (the
  // client infers INT64, STRING, FLOAT64, BOOL from the JS values).
  const [rows] = await bigquery.query({
    query: `SELECT id, name, score FROM ${table} WHERE id >= @lo AND name = @name AND score > @minScore AND @flag ORDER BY id`,
    params: {lo: 8, name: 'row', minScore: 3.5, flag: true},
  });
  out.named = rows.map(r => [r.id, r.name, r.score]);

  // Positional parameters from an array, an ARRAY among them.
  const [pos] = await bigquery.query({
    query: `SELECT COUNT(*) AS n, SUM(id) AS s FROM ${table} WHERE id IN UNNEST(?) AND name = ?`,
    params: [[2, 3, 5, 1000], 'row'],
  });
  out.positional = [pos[0].n, pos[0].s];

  // Typed parameters: a TIMESTAMP from a Date, a DATE, a NUMERIC and a
  // NULL with its type given.
  const [typed] = await bigquery.query({
    query: 'SELECT UNIX_SECONDS(@ts) AS secs, @d AS d, @n * 2 AS n2, @missing IS NULL AS isnull',
    params: {ts: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)), d: bigquery.date('2024-02-29'), n: '1.25', missing: null},
    types: {n: 'NUMERIC', missing: 'INT64'},
  });
  out.typed = [typed[0].secs, typed[0].d.value, typed[0].n2.toString(), typed[0].isnull];

  // createQueryJob() + job.getQueryResults(), paged.
  const [job] = await bigquery.createQueryJob({
    query: `SELECT id FROM ${table} WHERE id > @lo ORDER BY id`,
    params: {lo: 10},
  });
  out.jobId = job.id;
  const [all] = await job.getQueryResults();
  out.jobRows = all.map(r => r.id);
  const [page, next] = await job.getQueryResults({maxResults: 3, autoPaginate: false});
  out.firstPage = page.map(r => r.id);
  out.hasNext = !!(next && next.pageToken);

  // DDL and DML statistics as jobs.get gives them to the client:
  // statementType, ddlOperationPerformed, ddlTargetTable,
  // numDmlAffectedRows (INSERT only).
  const dataset = table.split('.')[0];
  out.ddl = [];
  for (const sql of [
    `CREATE TABLE ${dataset}.t_node_ddl (x INT64)`,
    `INSERT INTO ${dataset}.t_node_ddl VALUES (1), (2)`,
    `CREATE OR REPLACE TABLE ${dataset}.t_node_ddl AS SELECT x FROM ${dataset}.t_node_ddl`,
    `DROP TABLE ${dataset}.t_node_ddl`,
  ]) {
    const [ddlJob] = await bigquery.createQueryJob({query: sql});
    await ddlJob.getQueryResults();
    const [md] = await ddlJob.getMetadata();
    const q = md.statistics.query;
    out.ddl.push([q.statementType, q.ddlOperationPerformed || '', q.ddlTargetTable ? q.ddlTargetTable.tableId : '', q.numDmlAffectedRows || '']);
  }

  // An undeclared parameter: BigQuery's message and reason.
  try {
    await bigquery.query({query: 'SELECT @nope', params: {x: 1}});
    out.undeclared = 'no error';
  } catch (err) {
    out.undeclared = err.message;
    out.undeclaredReason = err.errors && err.errors[0] && err.errors[0].reason;
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch(err => {
  process.stderr.write(`${err.stack || err}\n${JSON.stringify(err.errors || '')}\n`);
  process.exit(1);
});
