#!/usr/bin/env node
/**
 * Archive benchmark: the worker's build of a session archive (every artifact streamed from S3 through
 * the storage service into a ZIP streamed back into S3) against the floor of simply reading every one
 * of those objects from the same S3 server in sequence (GetObject, body read to the end), and against
 * the floor of all the S3 work a build does (the same reads while their bytes stream into one new object
 * with lib-storage), in one run.
 * Prints build time / floor and the worker's peak RSS as its section of docs/benchmarks.md; `--write-docs` (or
 * BENCH_WRITE_DOCS=1) also writes it there.
 *
 *   node bench/archive.bench.mjs [SIZES]     (normally `npm run bench:archive`, i.e. bench/run.sh archive)
 *
 * SIZES / BENCH_ARCHIVE_SIZES: session totals, comma-separated (default "100MiB,1GiB").
 * BENCH_ARCHIVE_FILES: artifacts per session (default 1000), sizes mixed (a few large, many small).
 * BENCH_DOCS_FILE, BENCH_PORT_BASE (default 19080; storage +1, worker +2), BENCH_DATABASE_URL,
 * BENCH_BUCKET (default uhp-bench), BENCH_REDIS_URL (default redis db 4), BENCH_SERVICE_ENV,
 * BENCH_NODE_ARGS: as for bench/transfer.bench.mjs.
 *
 * A measurement, not a test: it exits non-zero only when a build fails or its ZIP is wrong.
 */
import { createCipheriv, createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import pg from 'pg';
import { commandOf, machineLine, positionalArgs, reportBlock } from './support/benchmarks.mjs';
import {
  API_BASE,
  API_KEY,
  benchS3Client,
  CLK_TCK,
  DATABASE_URL,
  deleteAllObjects,
  ensureBucket,
  makeRoomInLocalS3,
  parseSize,
  procStat,
  S3,
  serviceEnv,
  ServiceStack,
  storageUploadSettings,
} from './support/stack.mjs';

const MB = 1e6;
const FILES = Number(process.env.BENCH_ARCHIVE_FILES ?? 1000);
// The build is timed from the database row, not from a waiting request.
const SERVICE_ENV = serviceEnv({ ARCHIVE_WAIT_MS: '0' });
const stack = new ServiceStack(SERVICE_ENV, 'archive-');

const sizes = (positionalArgs()[0] ?? process.env.BENCH_ARCHIVE_SIZES ?? '100MiB,1GiB')
  .split(',')
  .filter((s) => s.trim())
  .map(parseSize);

// ------------------------------------------------------------------ data ---
/**
 * FILES sizes summing to `total`: weights 1/(i+1) give a few large files and a long tail of small ones
 * (at 1 GiB over 1,000 files: 140 MiB down to about 140 KiB). Every 5th file is text (deflated), the
 * rest binary of several types (stored), so both paths of the writer run.
 */
function artifactPlan(total) {
  const weights = Array.from({ length: FILES }, (_, i) => 1 / (i + 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  const sizes = weights.map((w) => Math.floor((w / sum) * total));
  sizes[0] += total - sizes.reduce((a, b) => a + b, 0);
  const kinds = [
    ['bin', 'application/octet-stream'],
    ['png', 'image/png'],
    ['pdf', 'application/pdf'],
    ['zip', 'application/zip'],
    ['txt', 'text/plain'],
  ];
  // Interleave large and small so the build does not meet all the big ones first.
  return sizes
    .map((bytes, i) => ({ bytes, index: i, kind: kinds[i % kinds.length] }))
    .sort((a, b) => ((a.index * 7919) % FILES) - ((b.index * 7919) % FILES));
}

const KEY = Buffer.alloc(32, 7);
/** Deterministic incompressible bytes (AES-CTR keystream), or compressible text. */
function makeData(bytes, seed, text) {
  if (text) {
    const line = Buffer.from(
      `line ${seed}: the quick brown fox jumps over the lazy dog; ${'lorem ipsum '.repeat(4)}\n`,
    );
    return Buffer.alloc(bytes, line);
  }
  const iv = Buffer.alloc(16);
  iv.writeUInt32BE(seed);
  return createCipheriv('aes-256-ctr', KEY, iv).update(Buffer.alloc(bytes));
}

// ------------------------------------------------------------------ processes ---
/** kB → bytes of one field of /proc/<pid>/status. */
function statusBytes(pid, field) {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

// ------------------------------------------------------------------ S3 and the database ---
const s3 = benchS3Client(16);
const db = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });

async function ensureEmptyBucket() {
  await ensureBucket(s3);
  await deleteAllObjects(s3);
}

async function api(method, path, body) {
  const res = await fetch(`${API_BASE}${path}`, {
    method,
    headers: { authorization: `Bearer ${API_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return res;
}

/**
 * A session through the API, its artifacts written the fast way: bytes straight into the bucket and
 * rows into Postgres exactly as the gateway writes them (the upload path is the transfer benchmark's).
 */
async function makeSession(total) {
  const session = await (await api('POST', '/v1/sessions', {})).json();
  const { rows } = await db.query('SELECT principal_id::text FROM sessions WHERE id = $1', [session.id]);
  const principalId = rows[0].principal_id;
  const plan = artifactPlan(total);
  const keys = [];
  let next = 0;
  const worker = async () => {
    while (next < plan.length) {
      const item = plan[next++];
      const text = item.kind[0] === 'txt';
      const data = makeData(item.bytes, item.index, text);
      const key = `objects/${randomUUID()}`;
      await s3.send(new PutObjectCommand({ Bucket: S3.bucket, Key: key, Body: data }));
      const sha256 = createHash('sha256').update(data).digest('hex');
      const object = await db.query(
        `INSERT INTO stored_objects (id, principal_id, storage_key, status, bytes, sha256, ref_count) VALUES (gen_random_uuid(), $1, $2, 'READY', $3, $4, 1) RETURNING id::text`,
        [principalId, key, item.bytes, sha256],
      );
      item.row = { key, objectId: object.rows[0].id, sha256 };
      keys.push(key);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  // Rows in plan order, so the archive's order (seq) is the plan's.
  for (const [i, item] of plan.entries()) {
    const id = `file_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await db.query(
      `INSERT INTO container_files (id, principal_id, session_id, container_id, object_id, filename, bytes, content_type, sha256, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'user')`,
      [
        id,
        principalId,
        session.id,
        session.container_id,
        item.row.objectId,
        `artifact-${String(i).padStart(4, '0')}.${item.kind[0]}`,
        item.bytes,
        item.kind[1],
        item.row.sha256,
      ],
    );
  }
  return { session, keys: plan.map((item) => item.row.key), plan };
}

/** The floor: every object read from S3 in sequence, body read to the end. */
async function readAllFromS3(keys) {
  const started = performance.now();
  let bytes = 0;
  for (const key of keys) {
    const out = await s3.send(new GetObjectCommand({ Bucket: S3.bucket, Key: key }));
    for await (const chunk of out.Body) bytes += chunk.length;
  }
  return { seconds: (performance.now() - started) / 1000, bytes };
}

/**
 * The floor of all the S3 work a build does: every object read in sequence as above and, at the same time,
 * all of their bytes written into one new object (lib-storage with the storage service's part size and
 * queue size), by this one process with nothing in between. A build must do at least that much: on a
 * machine with no spare core, writing the ZIP back costs the S3 server as much CPU as reading it.
 */
async function readAllAndWriteBack(keys) {
  const { partSize, queueSize } = storageUploadSettings(SERVICE_ENV);
  const Key = `bench/floor-write-back-${randomUUID()}`;
  const body = new PassThrough();
  const upload = new Upload({ client: s3, params: { Bucket: S3.bucket, Key, Body: body }, partSize, queueSize });
  const started = performance.now();
  const done = upload.done();
  // Seen later (at a drain or at the end); until then a failure must not count as unhandled.
  done.catch(() => undefined);
  let bytes = 0;
  try {
    for (const key of keys) {
      const out = await s3.send(new GetObjectCommand({ Bucket: S3.bucket, Key: key }));
      for await (const chunk of out.Body) {
        bytes += chunk.length;
        // An upload that fails stops draining its body: wait for whichever comes first.
        if (!body.write(chunk)) await Promise.race([once(body, 'drain'), done]);
      }
    }
    body.end();
    await done;
    return { seconds: (performance.now() - started) / 1000, bytes };
  } catch (error) {
    body.destroy(error);
    await done.catch(() => undefined);
    throw error;
  } finally {
    await s3.send(new DeleteObjectCommand({ Bucket: S3.bucket, Key })).catch(() => undefined);
  }
}

const SERVICES = ['worker', 'storage', 'gateway'];

/**
 * Asks for the archive (202 at once: ARCHIVE_WAIT_MS=0) and times the build until its row is ready, sampling the
 * worker's RSS; counts each service's CPU seconds (utime + stime) over the build.
 */
async function buildArchive(sessionId) {
  const workerPid = stack.pid('worker');
  const ticksBefore = SERVICES.map((name) => procStat(stack.pid(name)).ticks);
  const idleRss = statusBytes(workerPid, 'VmRSS');
  let peakRss = idleRss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, statusBytes(workerPid, 'VmRSS'));
  }, 50);
  const started = performance.now();
  const first = await api('GET', `/v1/sessions/${sessionId}/files/archive`);
  await first.arrayBuffer();
  if (first.status !== 202) throw new Error(`expected 202 from the first archive request, got ${first.status}`);
  let row;
  for (;;) {
    ({
      rows: [row],
    } = await db.query(
      `SELECT a.status::text, a.error, o.bytes::text AS zip_bytes, EXTRACT(EPOCH FROM (a.completed_at - a.created_at))::float AS row_seconds FROM archives a LEFT JOIN stored_objects o ON o.id = a.object_id WHERE a.session_id = $1`,
      [sessionId],
    ));
    if (row?.status === 'ready') break;
    if (row?.status === 'failed') throw new Error(`archive build failed: ${row.error}`);
    await sleep(100);
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peakRss = Math.max(peakRss, statusBytes(workerPid, 'VmRSS'));
  const cpu = Object.fromEntries(
    SERVICES.map((name, i) => [name, (procStat(stack.pid(name)).ticks - ticksBefore[i]) / CLK_TCK]),
  );
  return { seconds, rowSeconds: row.row_seconds, zipBytes: Number(row.zip_bytes), idleRss, peakRss, cpu };
}

/** The archive's end record, read with a Range request through the gateway: the entry count must be FILES. */
async function checkArchive(sessionId, zipBytes) {
  const tail = Math.min(zipBytes, 64 * 1024);
  const res = await fetch(`${API_BASE}/v1/sessions/${sessionId}/files/archive`, {
    headers: { authorization: `Bearer ${API_KEY}`, range: `bytes=${zipBytes - tail}-${zipBytes - 1}` },
  });
  const buf = Buffer.from(await res.arrayBuffer());
  if (res.status !== 206) throw new Error(`archive range: ${res.status}`);
  const eocd = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const entries = buf.readUInt16LE(eocd + 10);
  if (entries !== FILES) throw new Error(`archive holds ${entries} entries, expected ${FILES}`);
}

// ------------------------------------------------------------------ report ---
const mb = (bytes) => `${(bytes / MB).toFixed(1)} MB`;
const cpuText = (cpu) => SERVICES.map((name) => cpu[name].toFixed(1)).join(' / ');

function docsOf(results) {
  return {
    machine: machineLine(),
    command: commandOf('archive'),
    rows: results.map((r) => [
      r.label,
      String(FILES),
      `**${(r.build.seconds / r.floorSeconds).toFixed(2)}**`,
      (r.build.seconds / r.writeBackSeconds).toFixed(2),
      `${r.build.seconds.toFixed(2)} s (${(r.bytes / MB / r.build.seconds).toFixed(0)} MB/s)`,
      `${r.floorSeconds.toFixed(2)} s (${(r.bytes / MB / r.floorSeconds).toFixed(0)} MB/s)`,
      `${r.writeBackSeconds.toFixed(2)} s`,
      cpuText(r.build.cpu),
      mb(r.build.zipBytes),
      mb(r.build.idleRss),
      mb(r.build.peakRss),
    ]),
  };
}

/**
 * Waits until the worker has purged every object a deleted session left (this run's previous size, or an
 * earlier run stopped before its worker got to them): those purges would otherwise run during the build and
 * count in the worker's and storage's CPU.
 */
async function waitForPurges() {
  const deadline = Date.now() + 10 * 60_000;
  for (let said = false; ;) {
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM stored_objects WHERE status = 'PURGING'`);
    if (rows[0].n === 0) return;
    if (Date.now() > deadline) throw new Error(`${rows[0].n} objects still purging after 10 minutes`);
    if (!said) process.stderr.write(`bench: waiting for the worker to purge ${rows[0].n} deleted objects ...\n`);
    said = true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function main() {
  await ensureEmptyBucket();
  await stack.start();
  const results = [];
  try {
    for (const size of sizes) {
      process.stderr.write(`bench: ${size.label}: writing ${FILES} artifacts ...\n`);
      // the artifacts, the ZIP of them, and the floor's copy
      makeRoomInLocalS3(3 * size.bytes);
      const { session, keys } = await makeSession(size.bytes);
      await waitForPurges();
      const floorBefore = await readAllFromS3(keys);
      const writeBack = await readAllAndWriteBack(keys);
      process.stderr.write(
        `bench: ${size.label}: floor ${floorBefore.seconds.toFixed(2)} s, with the write back ${writeBack.seconds.toFixed(2)} s; building ...\n`,
      );
      const build = await buildArchive(session.id);
      const floorAfter = await readAllFromS3(keys);
      await checkArchive(session.id, build.zipBytes);
      const result = {
        label: size.label,
        bytes: size.bytes,
        floorSeconds: (floorBefore.seconds + floorAfter.seconds) / 2,
        writeBackSeconds: writeBack.seconds,
        build,
      };
      results.push(result);
      console.log(
        `${size.label}: floor ${floorBefore.seconds.toFixed(2)}/${floorAfter.seconds.toFixed(2)} s, build ${build.seconds.toFixed(2)} s (row ${build.rowSeconds.toFixed(2)} s), ` +
          `build/floor ${(build.seconds / result.floorSeconds).toFixed(2)}, read + write back ${writeBack.seconds.toFixed(2)} s (build / that ${(build.seconds / writeBack.seconds).toFixed(2)}), CPU s worker/storage/gateway ${cpuText(build.cpu)}, zip ${mb(build.zipBytes)}, worker RSS idle ${mb(build.idleRss)} peak ${mb(build.peakRss)}`,
      );
      await api('DELETE', `/v1/sessions/${session.id}`);
    }
  } finally {
    await stack.stop();
    await db.end();
  }
  reportBlock('archive', docsOf(results));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
