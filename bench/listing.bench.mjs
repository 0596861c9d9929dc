/**
 * A session listing at scale (`npm run bench:listing`): `GET /v1/sessions/{sid}/files` of a session with
 * BENCH_LISTING_ROWS (100,000) artifacts, streamed whole, against a baseline in the same run: a plain `pg`
 * client reading the same rows in keyset batches and serialising them to JSON (the floor of any Node
 * process that lists these rows). Prints time, the ratio to the baseline and the gateway's RSS idle → peak.
 * The artifacts are inserted with SQL (one stored object shared by all), and removed again at the end.
 * Prints its section of docs/benchmarks.md; `--write-docs` (or BENCH_WRITE_DOCS=1) also writes it there.
 */
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import pg from 'pg';
import { commandOf, machineLine, reportBlock } from './support/benchmarks.mjs';
import { API_BASE, API_KEY, DATABASE_URL, ServiceStack, serviceEnv } from './support/stack.mjs';

const ROWS = Number(process.env.BENCH_LISTING_ROWS ?? 100_000);
const RUNS = Number(process.env.BENCH_LISTING_RUNS ?? 3);

const rssOf = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function api(method, path, body) {
  const res = await fetch(`${API_BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${API_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** The whole listing, read and counted; resolves with its size in bytes and the seconds it took. */
function listAll(sessionId) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    get(`${API_BASE}/v1/sessions/${sessionId}/files`, { headers: { authorization: `Bearer ${API_KEY}` } }, (res) => {
      let bytes = 0;
      res.on('data', (chunk) => (bytes += chunk.length));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve({ bytes, seconds: Number(process.hrtime.bigint() - started) / 1e9 })
          : reject(new Error(`listing: ${res.statusCode}`)),
      );
    }).on('error', reject);
  });
}

/** The floor: the same rows through `pg`, 500 per keyset query, each serialised as the API would. */
async function baseline(client, sessionId) {
  const started = process.hrtime.bigint();
  let after = 0n;
  let bytes = 0;
  for (;;) {
    const { rows } = await client.query(
      `SELECT id, seq, container_id, session_id, filename, bytes, content_type, sha256, source, response_id, created_at
         FROM container_files WHERE session_id = $1 AND deleted_at IS NULL AND seq > $2 ORDER BY seq LIMIT 500`,
      [sessionId, after.toString()],
    );
    for (const row of rows)
      bytes += JSON.stringify({
        id: row.id,
        object: 'container.file',
        container_id: row.container_id,
        session_id: row.session_id,
        filename: row.filename,
        path: `/mnt/data/${row.filename}`,
        bytes: Number(row.bytes),
        content_type: row.content_type,
        sha256: row.sha256,
        created_at: Math.floor(row.created_at.getTime() / 1000),
        source: row.source,
        response_id: row.response_id,
      }).length;
    if (rows.length < 500) break;
    after = BigInt(rows.at(-1).seq);
  }
  return { bytes, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

async function main() {
  const stack = new ServiceStack(serviceEnv(), 'listing-');
  await stack.start();
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  let session;
  let seed;
  try {
    session = await api('POST', '/v1/sessions', {});
    const containerId = session.container_id;
    const form = new FormData();
    form.append('file', new Blob(['listing bench\n'], { type: 'text/plain' }), 'seed.txt');
    const seedRes = await fetch(`${API_BASE}/v1/containers/${containerId}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}` },
      body: form,
    });
    if (!seedRes.ok) throw new Error(`seed artifact: ${seedRes.status} ${await seedRes.text()}`);
    seed = await seedRes.json();
    console.log(`listing bench: inserting ${ROWS.toLocaleString('en')} artifacts with SQL ...`);
    await client.query(
      `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes,
                                    content_type, sha256, source, created_at)
       SELECT 'file_' || lpad(to_hex(g), 24, '0'), f.principal_id, f.session_id, f.container_id,
              f.object_id, 'report-' || g || '.md', f.bytes, f.content_type, f.sha256, f.source, now()
         FROM container_files f, generate_series(1, $2::int - 1) g WHERE f.id = $1`,
      [seed.id, ROWS],
    );
    await client.query('ANALYZE container_files');

    const pgVersion = `PostgreSQL ${(await client.query('SHOW server_version')).rows[0].server_version.split(' ')[0]}`;
    const gatewayPid = stack.pid('gateway');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = rssOf(gatewayPid);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(gatewayPid))), 20);
    const ours = [];
    const floor = [];
    let listed;
    try {
      for (let run = 0; run < RUNS; run++) {
        floor.push(await baseline(client, session.id));
        listed = await listAll(session.id);
        ours.push(listed);
      }
    } finally {
      clearInterval(sampler);
    }
    const oursS = median(ours.map((r) => r.seconds));
    const floorS = median(floor.map((r) => r.seconds));
    const json = `${(listed.bytes / 1e6).toFixed(0)} MB`;
    reportBlock('listing', {
      machine: `${machineLine()}, ${pgVersion}`,
      command: commandOf('listing'),
      rows: [
        [
          `\`GET /v1/sessions/{sid}/files\`, ${ROWS.toLocaleString('en')} artifacts`,
          `**${(oursS / floorS).toFixed(2)}**`,
          `${oursS.toFixed(2)} s`,
          json,
          `${mb(idle)} → ${mb(peak)} (+${mb(peak - idle)})`,
        ],
        [
          'baseline: `pg`, 500 rows per keyset query',
          '1.00',
          `${floorS.toFixed(2)} s`,
          `${(floor.at(-1).bytes / 1e6).toFixed(0)} MB`,
          '–',
        ],
      ],
    });
  } finally {
    if (seed)
      await client.query(`DELETE FROM container_files WHERE session_id = $1 AND id <> $2`, [session.id, seed.id]);
    if (session) await api('DELETE', `/v1/sessions/${session.id}`).catch(() => undefined);
    await client.end();
    await stack.stop();
  }
}

await main();
