// Drives Google's official Node.js BigQuery REST client
// (@google-cloud/bigquery) through a user's first hour with queries and
// jobs, past query.js: parameters of every kind the client infers or is
// told (STRUCT, ARRAY of STRUCT, BYTES, TIMESTAMP, DATE, DATETIME, TIME,
// NUMERIC, BIGNUMERIC, GEOGRAPHY, JSON, a big INT64), result values of
// those types, createQueryJob + getQueryResults page by page with
// pageToken, dryRun, job.cancel, job.getMetadata, getJobs, a repeated job
// id, a view redefined with setMetadata, and the errors' reasons. The
// table BQSTORE_TABLE (dataset.table) holds ids 1..N, name "row", score
// id/2. Prints one JSON object of named results; any failure exits
// non-zero with the error on stderr. Driven by internal/e2e TestNodeJobs.
'use strict';

const {BigQuery} = require('@google-cloud/bigquery');
const {OAuth2Client} = require('google-auth-library');

async function main() {
  const addr = process.env.BQSTORE_HTTP_ADDR;
  const project = process.env.BQSTORE_PROJECT || 'local';
  const table = process.env.BQSTORE_TABLE;
  const dataset = table.split('.')[0];
  const authClient = new OAuth2Client();
  authClient.setCredentials({access_token: 'test', expiry_date: Date.now() + 3600e3});
  const bigquery = new BigQuery({projectId: project, apiEndpoint: `http://${addr}`, authClient});
  const out = {};
  // reason runs fn, which must fail, and gives [HTTP code, reason].
  const reason = async fn => {
    try {
      await fn();
      return 'no error';
    } catch (err) {
      return [err.code, err.errors && err.errors[0] && err.errors[0].reason];
    }
  };

  // Parameters the client infers from JS values: a STRUCT (object) with
  // an ARRAY and a DATE in it, an ARRAY of STRUCT, a BigQueryInt past 2^53,
  // a Geography; a NUMERIC given as a string with its type.
  const [inferred] = await bigquery.query({
    query: 'SELECT @s.n AS n, @s.arr[OFFSET(1)] AS second, @s.d AS d, ' +
      '(SELECT SUM(x.v) FROM UNNEST(@xs) x) AS total, @num * 2 AS num, @big + 1 AS big, ST_ASTEXT(@g) AS g',
    params: {
      s: {n: 'a', arr: [10, 20], d: bigquery.date('2024-02-29')},
      xs: [{v: 1}, {v: 2}, {v: 4}],
      num: '1.25',
      big: bigquery.int('9007199254740993'),
      g: bigquery.geography('POINT(1 2)'),
    },
    types: {num: 'NUMERIC'},
    wrapIntegers: true,
  });
  const r0 = inferred[0];
  out.inferred = [r0.n, r0.second.value, r0.d.value, r0.total.value, r0.num.toString(), r0.big.value, r0.g];

  // Parameters with their types given: BYTES (base64), TIMESTAMP,
  // DATETIME, TIME, BIGNUMERIC, JSON, an empty ARRAY, a NULL STRUCT field.
  const [typed] = await bigquery.query({
    query: 'SELECT TO_HEX(@b) AS b, UNIX_MICROS(@ts) AS ts, @dt AS dt, @t AS t, @bn + 1 AS bn, ' +
      'JSON_VALUE(@j, "$.a") AS j, ARRAY_LENGTH(@empty) AS empty, @st.x IS NULL AS nullField',
    params: {
      b: Buffer.from('abc').toString('base64'),
      ts: bigquery.timestamp('2024-01-02T03:04:05.123456Z'),
      dt: bigquery.datetime('2024-01-01 10:11:12'),
      t: bigquery.time('10:11:12.5'),
      bn: '0.12345678901234567890123456789012345678',
      j: {a: 'x'},
      empty: [],
      st: {x: null},
    },
    types: {b: 'BYTES', bn: 'BIGNUMERIC', j: 'JSON', empty: ['STRING'], st: {x: 'INT64'}},
  });
  const t0 = typed[0];
  out.typed = [t0.b, t0.ts, t0.dt.value, t0.t.value, t0.bn.toString(), t0.j, t0.empty, t0.nullField];

  // Result values of each type, as the client converts them.
  const [vals] = await bigquery.query(
    "SELECT STRUCT(1 AS a, ['x', 'y'] AS b) AS s, [STRUCT(1 AS x), STRUCT(2 AS x)] AS sa, b'ab' AS byt, " +
    "NUMERIC '1.5' AS n, TIMESTAMP '2024-01-01 00:00:00.25+00' AS ts, DATE '2024-01-01' AS d, " +
    "DATETIME '2024-01-01 01:02:03' AS dt, TIME '01:02:03' AS t, JSON '{\"a\":1}' AS j, " +
    "CAST(NULL AS INT64) AS nn, CAST('-inf' AS FLOAT64) AS ninf");
  const v = vals[0];
  out.values = [v.s, v.sa, v.byt.toString('hex'), v.n.toString(), v.ts.value, v.d.value, v.dt.value, v.t.value, v.j, v.nn,
    v.ninf === -Infinity];

  // createQueryJob, then getQueryResults page by page with pageToken.
  const [job] = await bigquery.createQueryJob({
    query: `SELECT id FROM ${table} WHERE id > @lo ORDER BY id`,
    params: {lo: 5},
    jobId: 'node-jobs-1',
    labels: {team: 'data'},
  });
  const pages = [];
  let opts = {maxResults: 4, autoPaginate: false};
  let totalRows;
  while (opts) {
    const [rows, next, resp] = await job.getQueryResults(opts);
    pages.push(rows.map(r => r.id));
    totalRows = resp.totalRows;
    opts = next;
  }
  out.pages = pages;
  out.totalRows = totalRows;
  const [md] = await job.getMetadata();
  out.metadata = [md.jobReference.jobId, md.jobReference.location, md.status.state, md.configuration.labels,
    md.configuration.query.useLegacySql, md.statistics.query.statementType, md.statistics.query.referencedTables.map(t => t.tableId)];
  out.duplicate = await reason(() => bigquery.createQueryJob({query: 'SELECT 1', jobId: 'node-jobs-1'}));
  const [jobsList] = await bigquery.getJobs({maxResults: 100});
  out.listed = jobsList.some(j => j.id === 'node-jobs-1' && j.metadata.status.state === 'DONE');

  // dryRun: the statistics, nothing run.
  const [dry] = await bigquery.createQueryJob({query: `SELECT id, score FROM ${table}`, dryRun: true});
  const ds = dry.metadata.statistics;
  out.dryRun = [dry.metadata.status.state, ds.totalBytesProcessed, ds.query.statementType, ds.query.schema.fields.map(f => f.name)];

  // job.cancel of a job that cannot finish soon (10^10 rows): DONE
  // with reason stopped; getQueryResults then answers that error.
  const [slow] = await bigquery.createQueryJob({
    query: 'SELECT COUNT(*) FROM UNNEST(GENERATE_ARRAY(1, 1000000)) a, UNNEST(GENERATE_ARRAY(1, 10000)) b WHERE MOD(a + b, 7) = 0',
  });
  await slow.cancel();
  let [smd] = await slow.getMetadata();
  while (smd.status.state !== 'DONE') {
    await new Promise(resolve => setTimeout(resolve, 100));
    [smd] = await slow.getMetadata();
  }
  out.cancelled = [smd.status.state, smd.status.errorResult && smd.status.errorResult.reason];
  out.cancelledResults = await reason(() => slow.getQueryResults());

  // Errors: a bad query, legacy SQL.
  out.badQuery = await reason(() => bigquery.query(`SELECT nope FROM ${table}`));
  out.legacy = await reason(() => bigquery.query({query: 'SELECT 1', useLegacySql: true}));

  // A view made by createTable({view}) and redefined by setMetadata.
  const [view] = await bigquery.dataset(dataset).createTable('node_jobs_v', {view: `SELECT id FROM ${table} WHERE id > 13`});
  await view.setMetadata({view: `SELECT id, name FROM ${table} WHERE id > 12`});
  const [vmd] = await view.getMetadata();
  const [vrows] = await bigquery.query(`SELECT COUNT(*) AS n FROM ${dataset}.node_jobs_v`);
  out.view = [vmd.schema.fields.map(f => f.name), vrows[0].n];
  process.stdout.write(JSON.stringify(out));
}

main().catch(err => {
  process.stderr.write(`${err.stack || err}\n${JSON.stringify(err.errors || '')}\n`);
  process.exit(1);
});
