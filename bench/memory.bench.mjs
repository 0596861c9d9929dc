/**
 * Memory bounded by configuration, not by load (`npm run bench:memory`).
 *
 * Starts the three services with their default memory settings (per-principal limits raised so one
 * bench principal may load them), then:
 *   1. issue 15's condition: BENCH_MEMORY_TRANSFERS (4) concurrent uploads, then as many concurrent downloads,
 *      of each of BENCH_MEMORY_TRANSFER_SIZES (100MiB,1GiB), smallest first: peak RSS against the targets
 *      (gateway < 150 MB, storage < 200 MB, within 20 MB from the smallest size to the largest);
 *   2. BENCH_MEMORY_UPLOADS (25,100) concurrent uploads of BENCH_MEMORY_UPLOAD_SIZE (100MiB) each, per level;
 *   3. BENCH_MEMORY_DOWNLOADS (100,500) concurrent downloads of one BENCH_MEMORY_DOWNLOAD_SIZE (16MiB) file.
 * Loads 2 and 3 at two levels: a peak that stays put as the load grows is bounded by configuration.
 * "Idle" is sampled BENCH_MEMORY_REST_S (75) after start, once V8 has shrunk what start-up grew.
 * Samples VmRSS of gateway and storage every 50 ms and prints peak vs. idle (the baseline of the same run)
 * next to the documented ceiling: storage ≈ idle + STORAGE_MEMORY_BUDGET_BYTES + 160 MiB.
 * Then, BENCH_MEMORY_SETTLE_S (120) after the last upload, the RSS each has come back to; and the worker's RSS
 * at rest (previews on), sampled with the others' idle.
 * Then the floor, unless BENCH_MEMORY_FLOOR=0: the same loads through the bare Node hops
 * (bench/support/bare-hops.mjs: no framework, database, logging or metrics) with storage's part size,
 * queue size and part-buffer budget, so what the byte path itself needs can be read apart from what our
 * services hold at rest.
 * Prints its section of docs/benchmarks.md, each load against the floor; `--write-docs` (or BENCH_WRITE_DOCS=1)
 * also writes it there.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { startBareHops } from './support/bare-hops.mjs';
import { commandOf, machineLine, reportBlock } from './support/benchmarks.mjs';
import {
  API_BASE,
  API_KEY,
  benchS3Client,
  deleteAllObjects,
  ensureBucket,
  makeRoomInLocalS3,
  MiB,
  parseSize,
  PORT_BASE,
  S3,
  ServiceStack,
  serviceEnv,
  storageUploadSettings,
} from './support/stack.mjs';

/** Concurrency levels, lowest first: a peak that stays put as the load grows is bounded by configuration. */
const levels = (text) =>
  text
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
const TRANSFERS = Number(process.env.BENCH_MEMORY_TRANSFERS ?? 4);
const TRANSFER_SIZES = (process.env.BENCH_MEMORY_TRANSFER_SIZES ?? '100MiB,1GiB')
  .split(',')
  .filter(Boolean)
  .map(parseSize)
  .sort((a, b) => a.bytes - b.bytes);
const UPLOAD_LEVELS = levels(process.env.BENCH_MEMORY_UPLOADS ?? '25,100');
const UPLOAD_SIZE = parseSize(process.env.BENCH_MEMORY_UPLOAD_SIZE ?? '100MiB');
const DOWNLOAD_LEVELS = levels(process.env.BENCH_MEMORY_DOWNLOADS ?? '100,500');
const DOWNLOAD_SIZE = parseSize(process.env.BENCH_MEMORY_DOWNLOAD_SIZE ?? '16MiB');
// What the process needs beyond the part buffers (the young generation regrown from rest, garbage of socket
// chunks between collections, the SDK's requests, 500 download signings at once): about the same from 25
// uploads to 500 downloads, so not growing with the load (docs/benchmarks.md, memory).
const SOCKET_SLACK = 160 * MiB;
const SETTLE_MS = Number(process.env.BENCH_MEMORY_SETTLE_S ?? 120) * 1000;
// "Idle" is a process at rest: V8 grows its young generation to full size while a service starts up and
// shrinks it back only when its memory reducer runs, about a minute later. Measured too early, ours would look
// bigger at rest and the load would seem to add less than it does.
const REST_MS = Number(process.env.BENCH_MEMORY_REST_S ?? 75) * 1000;

const rssOf = (pid) => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
  } catch {
    return NaN;
  }
};
const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;

/** Peak VmRSS per service while `work` runs, sampled every 50 ms. */
async function peaksDuring(pids, work) {
  const peak = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rssOf(pid)]));
  const timer = setInterval(() => {
    for (const [name, pid] of Object.entries(pids)) peak[name] = Math.max(peak[name], rssOf(pid));
  }, 50);
  const started = Date.now();
  try {
    const result = await work();
    return { peak, seconds: (Date.now() - started) / 1000, result };
  } finally {
    clearInterval(timer);
  }
}

const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

const OURS = { base: API_BASE, uploadPath: '/v1/files', headers: { authorization: `Bearer ${API_KEY}` } };
const BARE_PORT = PORT_BASE + 30;
const BARE = { base: `http://127.0.0.1:${BARE_PORT}`, uploadPath: '/', headers: {} };

/**
 * One multipart upload of `bytes` to `to` (OURS or BARE), written 1 MiB at a time with backpressure;
 * resolves with the answer (ours: the file; bare: its byte count and SHA-256).
 */
function upload(name, bytes, block, to = OURS) {
  const boundary = `bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${name}"\r\n` +
      `content-type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(
      `${to.base}${to.uploadPath}`,
      {
        method: 'POST',
        agent,
        headers: {
          ...to.headers,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + bytes + tail.length,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode === 200) resolve(JSON.parse(text));
          else reject(new Error(`upload ${name}: ${res.statusCode} ${text.slice(0, 200)}`));
        });
      },
    );
    req.on('error', reject);
    req.write(head);
    let sent = 0;
    const pump = () => {
      while (sent < bytes) {
        const piece = block.subarray(0, Math.min(block.length, bytes - sent));
        sent += piece.length;
        if (!req.write(piece)) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    pump();
  });
}

/** Reads a whole download of `path` from `from` (OURS or BARE) and throws it away; resolves with its length. */
function download(path, from = OURS) {
  return new Promise((resolve, reject) => {
    const req = request(`${from.base}${path}`, { agent, headers: from.headers }, (res) => {
      let length = 0;
      res.on('data', (c) => (length += c.length));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(length) : reject(new Error(`download: ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Our gateway as the loads see it: uploads are files, downloads read their content, removal deletes them. */
const oursSide = {
  upload: (name, bytes, block) => upload(name, bytes, block, OURS),
  check: (file, bytes) => file.bytes === bytes,
  download: (file) => download(`/v1/files/${file.id}/content`, OURS),
  remove: (file) =>
    fetch(`${API_BASE}/v1/files/${file.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${API_KEY}` } }),
};

/** The bare hops as the loads see them: objects under bench/bare-, read through a URL signed for each. */
function bareSide(s3) {
  const key = (name) => `bench/bare-${name}`;
  return {
    // As storage signs one for the gateway: a URL for this one object, signed once, opened by the front.
    upload: async (name, bytes, block) => ({
      ...(await upload(name, bytes, block, BARE)),
      name,
      url: await getSignedUrl(s3, new GetObjectCommand({ Bucket: S3.bucket, Key: key(name) }), { expiresIn: 3600 }),
    }),
    check: (object, bytes) => object.bytes === bytes,
    download: (object) => download(`/read?from=${encodeURIComponent(object.url)}`, BARE),
    remove: (object) => s3.send(new DeleteObjectCommand({ Bucket: S3.bucket, Key: key(object.name) })),
  };
}

/**
 * The loads, in order, through `side` (oursSide or bareSide): issue 15's concurrent transfers, then the
 * upload levels, then the download levels. One row per load: its label, peaks and time.
 */
async function runLoads(side, pids, block, prefix = '') {
  const rows = [];
  const measure = async (row, work) => {
    console.log(`memory bench${prefix}: ${row.load} ...`);
    const run = await peaksDuring(pids, work);
    rows.push({ ...row, ...run });
    return run.result;
  };
  const uploads = async (count, size, tag, transfer = false) => {
    makeRoomInLocalS3(count * size.bytes);
    const names = Array.from({ length: count }, (_, i) => `${tag}-${i}.bin`);
    const row = { kind: 'upload', load: `${count} concurrent uploads of ${size.label}`, transfer, size };
    const stored = await measure(row, () => Promise.all(names.map((name) => side.upload(name, size.bytes, block))));
    if (!stored.every((handle) => side.check(handle, size.bytes))) throw new Error('an upload came back short');
    return stored;
  };
  const downloads = async (count, handle, size, transfer = false) => {
    const row = { kind: 'download', load: `${count} concurrent downloads of ${size.label}`, transfer, size };
    const lengths = await measure(row, () => Promise.all(Array.from({ length: count }, () => side.download(handle))));
    if (!lengths.every((length) => length === size.bytes)) throw new Error('a download came back short');
  };

  for (const size of TRANSFER_SIZES) {
    const stored = await uploads(TRANSFERS, size, `transfer-${size.label}`, true);
    await downloads(TRANSFERS, stored[0], size, true);
    await Promise.all(stored.map((handle) => side.remove(handle)));
  }
  for (const count of UPLOAD_LEVELS)
    await Promise.all((await uploads(count, UPLOAD_SIZE, `up-${count}`)).map((handle) => side.remove(handle)));
  makeRoomInLocalS3(DOWNLOAD_SIZE.bytes);
  const source = await side.upload('down.bin', DOWNLOAD_SIZE.bytes, block);
  for (const count of DOWNLOAD_LEVELS) await downloads(count, source, DOWNLOAD_SIZE);
  await side.remove(source);
  return rows;
}

/**
 * The floor: the same loads through the bare hops, with storage's part size, queue size and part-buffer
 * budget. Resolves with their idle RSS and one row per load, in main's order.
 */
async function floorOf(s3, settings, block) {
  const bare = await startBareHops({ port: BARE_PORT, ...settings });
  const pids = { gateway: bare.pids.front, storage: bare.pids.back };
  try {
    await sleep(REST_MS);
    const idle = { gateway: rssOf(pids.gateway), storage: rssOf(pids.storage) };
    return { idle, rows: await runLoads(bareSide(s3), pids, block, ', floor') };
  } finally {
    await bare.stop();
  }
}

/** The block of docs/benchmarks.md: each load through ours against the same load through the bare hops. */
function docsOf({ rows, idle, floor, settings, storageCeiling, settled, workerIdle }) {
  const growth = (peak, rest) => `${mb(rest)} → ${mb(peak)}`;
  const ratio = (a, b) => (floor ? (a / b).toFixed(2) : '–');
  return {
    machine: machineLine(),
    command: commandOf('memory'),
    rows: rows.map((row, i) => {
      const bare = floor?.rows[i];
      return [
        row.load,
        ratio(row.seconds, bare?.seconds),
        floor ? `**${ratio(row.peak.gateway, bare.peak.gateway)}**` : '–',
        floor ? `**${ratio(row.peak.storage, bare.peak.storage)}**` : '–',
        (row.peak.storage / storageCeiling).toFixed(2),
        `${row.seconds.toFixed(0)} s / ${bare ? `${bare.seconds.toFixed(0)} s` : '–'}`,
        growth(row.peak.gateway, idle.gateway),
        bare ? growth(bare.peak.gateway, floor.idle.gateway) : '–',
        growth(row.peak.storage, idle.storage),
        bare ? growth(bare.peak.storage, floor.idle.storage) : '–',
      ];
    }),
    notes: [
      `idle + budget (${settings.budgetBytes / MiB} MiB) + ${SOCKET_SLACK / MiB} MiB = ` +
        `${mb(storageCeiling)}; ${settings.partSize / MiB} MiB parts, ${settings.queueSize} in flight per upload.`,
      `${SETTLE_MS / 1000} s after the last upload, gateway ${mb(settled.gateway)} and storage ${mb(settled.storage)}.`,
      `${mb(workerIdle)}, previews on, ${REST_MS / 1000} s after start.`,
    ],
  };
}

async function main() {
  const s3 = benchS3Client();
  await ensureBucket(s3);
  await deleteAllObjects(s3);
  const env = serviceEnv({
    UHP_MAX_CONCURRENT_UPLOADS: String(UPLOAD_LEVELS.at(-1)),
    UHP_MAX_CONCURRENT_DOWNLOADS: String(DOWNLOAD_LEVELS.at(-1)),
    UHP_MAX_FILE_BYTES: String(
      Math.max(UPLOAD_SIZE.bytes, DOWNLOAD_SIZE.bytes, ...TRANSFER_SIZES.map((size) => size.bytes)),
    ),
    // A transfer that waits for a part buffer moves no byte meanwhile: the idle limit must outlast the queue.
    UHP_IDLE_TIMEOUT_MS: '600000',
  });
  // The services run at their default memory settings; the bench reads them from the built config schema.
  const settings = storageUploadSettings(env);
  const stack = new ServiceStack(env, 'memory-');
  await stack.start();
  const pids = { gateway: stack.pid('gateway'), storage: stack.pid('storage') };
  try {
    await sleep(REST_MS);
    const idle = { gateway: rssOf(pids.gateway), storage: rssOf(pids.storage) };
    // The worker as it idles between jobs, previews on (its converters checked at start, none running).
    const workerIdle = rssOf(stack.pid('worker'));
    const block = randomBytes(MiB);

    const rows = await runLoads(oursSide, pids, block);
    const lastUploadEnd = Date.now();
    await stack.checkReady();
    // Storage lets go of part buffers no upload has taken for 60 s (PART_BUFFER_IDLE_MS); the memory returns at
    // V8's next collection, which an idle process may put off for a while.
    await sleep(Math.max(0, lastUploadEnd + SETTLE_MS - Date.now()));
    const settled = { gateway: rssOf(pids.gateway), storage: rssOf(pids.storage) };
    const floor = process.env.BENCH_MEMORY_FLOOR === '0' ? null : await floorOf(s3, settings, block);

    const storageCeiling = idle.storage + settings.budgetBytes + SOCKET_SLACK;
    reportBlock('memory', docsOf({ rows, idle, floor, settings, storageCeiling, settled, workerIdle }));
    const withinCeiling = rows.every((row) => row.peak.storage <= storageCeiling);
    console.log(withinCeiling ? 'storage stayed under its documented ceiling' : 'storage went PAST its ceiling');
    if (!withinCeiling) process.exitCode = 1;
  } finally {
    await stack.stop();
    await deleteAllObjects(s3).catch(() => undefined);
  }
}

await main();
