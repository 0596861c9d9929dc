/**
 * Memory bounded by configuration, not by load (`npm run bench:memory`).
 *
 * Starts the three services with their default memory settings (per-principal limits raised so one
 * bench principal may load them), then:
 *   1. BENCH_MEMORY_UPLOADS (25,100) concurrent uploads of BENCH_MEMORY_UPLOAD_SIZE (100MiB) each, per level;
 *   2. BENCH_MEMORY_DOWNLOADS (100,500) concurrent downloads of one BENCH_MEMORY_DOWNLOAD_SIZE (16MiB) file.
 * Each load at two levels: a peak that stays put as the load grows is bounded by configuration.
 * Samples VmRSS of gateway and storage every 50 ms and prints peak vs. idle (the baseline of the same run)
 * next to the documented ceiling: storage ≈ idle + STORAGE_MEMORY_BUDGET_BYTES + 128 MiB.
 * Writes the "memory" section of docs/benchmarks.md unless BENCH_MEMORY_NO_DOCS=1.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, totalmem } from 'node:os';
import {
  API_BASE,
  API_KEY,
  benchS3Client,
  deleteAllObjects,
  ensureBucket,
  makeRoomInLocalS3,
  MiB,
  parseSize,
  ServiceStack,
  serviceEnv,
  writeDocsSection,
} from './support/stack.mjs';

/** Concurrency levels, lowest first: a peak that stays put as the load grows is bounded by configuration. */
const levels = (text) =>
  text
    .split(',')
    .map(Number)
    .sort((a, b) => a - b);
const UPLOAD_LEVELS = levels(process.env.BENCH_MEMORY_UPLOADS ?? '25,100');
const UPLOAD_SIZE = parseSize(process.env.BENCH_MEMORY_UPLOAD_SIZE ?? '100MiB');
const DOWNLOAD_LEVELS = levels(process.env.BENCH_MEMORY_DOWNLOADS ?? '100,500');
const DOWNLOAD_SIZE = parseSize(process.env.BENCH_MEMORY_DOWNLOAD_SIZE ?? '16MiB');
const BUDGET = 256 * MiB; // STORAGE_MEMORY_BUDGET_BYTES's default: the bench measures the defaults
// What the process needs beyond the part buffers (garbage of socket chunks between collections, the SDK's
// requests): measured 85-105 MB from 25 to 100 concurrent uploads, so not growing with the load.
const SOCKET_SLACK = 128 * MiB;

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

/** One multipart upload of `bytes`, written 1 MiB at a time with backpressure; resolves with the file. */
function upload(name, bytes, block) {
  const boundary = `bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${name}"\r\n` +
      `content-type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(
      `${API_BASE}/v1/files`,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${API_KEY}`,
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

/** Reads a whole download and throws it away; resolves with its length. */
function download(id) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${API_BASE}/v1/files/${id}/content`,
      { agent, headers: { authorization: `Bearer ${API_KEY}` } },
      (res) => {
        let length = 0;
        res.on('data', (c) => (length += c.length));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(length) : reject(new Error(`download: ${res.statusCode}`)),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function remove(id) {
  await fetch(`${API_BASE}/v1/files/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${API_KEY}` } });
}

async function main() {
  const s3 = benchS3Client();
  await ensureBucket(s3);
  await deleteAllObjects(s3);
  const stack = new ServiceStack(
    serviceEnv({
      UHP_MAX_CONCURRENT_UPLOADS: String(UPLOAD_LEVELS.at(-1)),
      UHP_MAX_CONCURRENT_DOWNLOADS: String(DOWNLOAD_LEVELS.at(-1)),
      UHP_MAX_FILE_BYTES: String(Math.max(UPLOAD_SIZE.bytes, DOWNLOAD_SIZE.bytes)),
      // A transfer that waits for a part buffer moves no byte meanwhile: the idle limit must outlast the queue.
      UHP_IDLE_TIMEOUT_MS: '600000',
    }),
    'memory-',
  );
  await stack.start();
  const pids = { gateway: stack.pid('gateway'), storage: stack.pid('storage') };
  try {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const idle = { gateway: rssOf(pids.gateway), storage: rssOf(pids.storage) };
    const block = randomBytes(MiB);

    const rows = [];
    for (const count of UPLOAD_LEVELS) {
      console.log(`memory bench: ${count} concurrent uploads of ${UPLOAD_SIZE.label} ...`);
      makeRoomInLocalS3(count * UPLOAD_SIZE.bytes);
      const run = await peaksDuring(pids, () =>
        Promise.all(Array.from({ length: count }, (_, i) => upload(`up-${i}.bin`, UPLOAD_SIZE.bytes, block))),
      );
      if (!run.result.every((file) => file.bytes === UPLOAD_SIZE.bytes)) throw new Error('an upload came back short');
      await Promise.all(run.result.map((file) => remove(file.id)));
      rows.push({ kind: 'upload', load: `${count} concurrent uploads of ${UPLOAD_SIZE.label}`, ...run });
    }
    makeRoomInLocalS3(DOWNLOAD_SIZE.bytes);
    const source = await upload('down.bin', DOWNLOAD_SIZE.bytes, block);
    for (const count of DOWNLOAD_LEVELS) {
      console.log(`memory bench: ${count} concurrent downloads of ${DOWNLOAD_SIZE.label} ...`);
      const run = await peaksDuring(pids, () => Promise.all(Array.from({ length: count }, () => download(source.id))));
      if (!run.result.every((length) => length === DOWNLOAD_SIZE.bytes)) throw new Error('a download came back short');
      rows.push({ kind: 'download', load: `${count} concurrent downloads of ${DOWNLOAD_SIZE.label}`, ...run });
    }
    await remove(source.id);
    await stack.checkReady();

    const storageCeiling = idle.storage + BUDGET + SOCKET_SLACK;
    const lines = [
      `Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB; ` +
        `services at their default memory settings (STORAGE_MEMORY_BUDGET_BYTES 256 MiB), one principal with its ` +
        `concurrency limits raised to the load. Storage ceiling = idle + budget + 128 MiB = ${mb(storageCeiling)}.`,
      '',
      '| load | time | gateway idle → peak | storage idle → peak | storage peak / ceiling |',
      '|---|---|---|---|---|',
      ...rows.map(
        (row) =>
          `| ${row.load} | ${row.seconds.toFixed(0)} s | ${mb(idle.gateway)} → ${mb(row.peak.gateway)} | ` +
          `${mb(idle.storage)} → ${mb(row.peak.storage)} | ${(row.peak.storage / storageCeiling).toFixed(2)} |`,
      ),
    ];
    console.log(lines.join('\n'));
    const withinCeiling = rows
      .filter((row) => row.kind === 'upload')
      .every((row) => row.peak.storage <= storageCeiling);
    console.log(
      withinCeiling ? 'storage stayed under its documented ceiling while uploading' : 'storage went PAST its ceiling',
    );
    if (process.env.BENCH_MEMORY_NO_DOCS !== '1') {
      writeDocsSection(
        'memory',
        'memory.bench.mjs',
        `## Memory under concurrent load\n\n${lines.join('\n')}\n\nRe-run: \`npm run bench:memory\`.\n`,
      );
    }
    if (!withinCeiling) process.exitCode = 1;
  } finally {
    await stack.stop();
    await deleteAllObjects(s3).catch(() => undefined);
  }
}

await main();
