#!/usr/bin/env node
/**
 * Transfer benchmark: upload and download of large files through the gateway (gateway → storage → S3)
 * side by side with a direct @aws-sdk/lib-storage upload and GetObject download of the same bytes to
 * the same S3 server, and with bare Node hops doing the same work (bench/support/bare-hops.mjs), in one
 * run. Prints CPU per GiB and throughput ratios and the peak RSS of the gateway and storage processes
 * during the transfers, and its section of docs/benchmarks.md; `--write-docs` (or BENCH_WRITE_DOCS=1) also writes
 * that section there.
 *
 *   node bench/transfer.bench.mjs [--write-docs] [SIZES]   (normally `npm run bench`, i.e. bench/run.sh)
 *
 * SIZES / BENCH_SIZES: comma-separated, e.g. "100MiB,1GiB" (default) or "16MiB" for a quick run.
 * BENCH_REPS: repetitions per size (default 3 up to 256 MiB, 2 above); each repetition runs both sides
 *   (upload then download), direct first in odd repetitions and ours first in even ones; medians are reported.
 * BENCH_DOCS_FILE: write that file instead of docs/benchmarks.md (only its generated section is replaced).
 * BENCH_PORT_BASE: gateway port (storage +1, worker +2); default 19080.
 * S3_PART_SIZE_BYTES / S3_UPLOAD_QUEUE_SIZE: passed to the storage service and used by the direct side.
 * BENCH_SERVICE_ENV: extra "K=V,K=V" for the three services only (e.g. MALLOC_ARENA_MAX=2).
 * BENCH_NODE_ARGS: extra node options for the three services (e.g. "--cpu-prof --cpu-prof-dir=bench/results/prof").
 * BENCH_BARE_NODE_ARGS: the same for the two bare hops (bench/support/bare-hops.mjs), e.g. "--trace-gc".
 * BENCH_CPU_PROFILE=1: a profiled run. The services and the bare hops run under `--cpu-prof` (profiles in
 *   bench/results/prof-RUNID/), and each measured transfer's window of time selects its samples in every
 *   profile: the run ends with CPU per GiB by kind of work (GC, socket I/O, parsing, SHA-256, copies, own code,
 *   ...) for gateway and storage next to the bare front and back, the same transfers. The profiler costs CPU
 *   itself, so a profiled run writes its own section ("transfer-profile"), never the main table.
 *
 * This is a measurement, not a test: nothing here asserts wall-clock time. It exits non-zero only when
 * a transfer fails or the bytes do not match.
 */
import { execFileSync } from 'node:child_process';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { commandOf, machineLine, positionalArgs, reportBlock } from './support/benchmarks.mjs';
import {
  API_KEY,
  benchS3Client,
  CLK_TCK,
  deleteAllObjects,
  ensureBucket,
  GiB,
  LOG_DIR,
  makeRoomInLocalS3,
  MiB,
  parseSize,
  PORT_BASE,
  procStat,
  ROOT,
  S3,
  serviceEnv,
  storageUploadSettings,
  ServiceStack,
} from './support/stack.mjs';
import { startBareHops } from './support/bare-hops.mjs';
import { KIND_NAMES, breakdown, readProfile, selfTimeWithin } from './support/cpu-profile.mjs';

const RESULTS_DIR = join(ROOT, 'bench', 'results');
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE === '1';
const require = createRequire(import.meta.url);

const MB = 1e6;

// ------------------------------------------------------------------ configuration ---
const MAX_FILE_BYTES = 2 * GiB;
const SERVICE_ENV = serviceEnv({ UHP_MAX_FILE_BYTES: String(MAX_FILE_BYTES) });
const stack = new ServiceStack(SERVICE_ENV);

/** The storage service's part size and queue size, read from the config schema (defaults or the env). */
const sizes = (positionalArgs()[0] ?? process.env.BENCH_SIZES ?? '100MiB,1GiB')
  .split(',')
  .filter((s) => s.trim())
  .map(parseSize);
for (const s of sizes) {
  if (s.bytes < 1 || s.bytes > MAX_FILE_BYTES)
    throw new Error(`size ${s.label} must be between 1 byte and ${MAX_FILE_BYTES} bytes`);
}
const repsFor = (bytes) =>
  process.env.BENCH_REPS ? Math.max(1, Number(process.env.BENCH_REPS)) : bytes <= 256 * MiB ? 3 : 2;

// ------------------------------------------------------------------ data ---
/**
 * Deterministic data, cheap to make and to check: a 16 MiB AES-CTR keystream repeated, in 1 MiB blocks
 * whose first 8 bytes are the block number (so no two blocks of a file are equal). Both sides send the
 * very same bytes; downloads are compared byte for byte against it (memcmp speed, no hashing).
 */
const BLOCK = MiB;
const BASE_BYTES = 16 * MiB;
const BASE = (() => {
  const cipher = createCipheriv('aes-128-ctr', Buffer.alloc(16, 0x75), Buffer.alloc(16, 0));
  return Buffer.concat([cipher.update(Buffer.alloc(BASE_BYTES)), cipher.final()]);
})();

function blockHeader(k) {
  const h = Buffer.alloc(8);
  h.writeBigUInt64LE(BigInt(k));
  return h;
}

function makeBlock(k, size) {
  const start = k * BLOCK;
  const len = Math.min(BLOCK, size - start);
  const from = start % BASE_BYTES;
  const buf = Buffer.allocUnsafe(len);
  BASE.copy(buf, 0, from, from + len);
  blockHeader(k).copy(buf, 0, 0, Math.min(8, len));
  return buf;
}

function* blocks(size) {
  const n = Math.ceil(size / BLOCK);
  for (let k = 0; k < n; k++) yield makeBlock(k, size);
}

function expectedSha256(size) {
  const hash = createHash('sha256');
  for (const b of blocks(size)) hash.update(b);
  return hash.digest('hex');
}

/** Compares a download, chunk by chunk, with the generated bytes. */
class Verifier {
  constructor(size) {
    this.size = size;
    this.offset = 0;
    this.mismatchAt = -1;
  }

  update(chunk) {
    let c = 0;
    while (c < chunk.length && this.mismatchAt < 0) {
      const o = this.offset;
      const k = Math.floor(o / BLOCK);
      const p = o - k * BLOCK;
      const blockLen = Math.min(BLOCK, this.size - k * BLOCK);
      if (blockLen <= 0) {
        this.mismatchAt = o; // more bytes than the file has
        return;
      }
      const n = Math.min(blockLen - p, chunk.length - c);
      let i = 0;
      if (p < 8) {
        const header = blockHeader(k);
        for (; i < Math.min(8 - p, n); i++) if (chunk[c + i] !== header[p + i]) this.mismatchAt = o + i;
      }
      const from = (k * BLOCK) % BASE_BYTES;
      if (i < n && chunk.compare(BASE, from + p + i, from + p + n, c + i, c + n) !== 0) this.mismatchAt = o;
      c += n;
      this.offset += n;
    }
  }

  get ok() {
    return this.mismatchAt < 0 && this.offset === this.size;
  }
}

// ------------------------------------------------------------------ /proc sampling ---
/** VmRSS, and RssAnon (the process's private memory: RSS without the mapped node binary and libraries). */
function memory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kB = (name) => Number(new RegExp(`${name}:\\s+(\\d+)\\s+kB`).exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kB('VmRSS'), anon: kB('RssAnon') };
  } catch {
    return { rss: NaN, anon: NaN };
  }
}
const rssBytes = (pid) => memory(pid).rss;

/** Busy and total jiffies of the whole machine (all cores). */
function machineTicks() {
  const [, ...v] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = v.map(Number);
  const busy = user + nice + system + irq + softirq + (steal || 0);
  return { busy, total: busy + idle + (iowait || 0) };
}

/** The Ceph daemons' pids from the pid files infra/local/s3.sh writes (for CPU accounting only). */
function cephPids() {
  const runDir = join(process.env.UHP_DATA_DIR ?? join(ROOT, '.data'), 'ceph', 'run');
  const out = {};
  for (const [name, file] of [
    ['radosgw', 'client.rgw.a.pid'],
    ['ceph-osd', 'osd.0.pid'],
  ]) {
    try {
      const pid = Number(readFileSync(join(runDir, file), 'utf8').replace(/\D/g, ''));
      if (pid && existsSync(`/proc/${pid}`)) out[name] = pid;
    } catch {
      // not there: not counted
    }
  }
  return out;
}

/** Samples VmRSS of the services every 50 ms and counts CPU of every process of interest. */
class Monitor {
  constructor(rssPids, cpuPids) {
    this.rssPids = rssPids;
    this.findCpuPids = cpuPids;
  }

  start() {
    this.cpuPids = this.findCpuPids(); // looked up each time: Ceph may have been restarted by someone
    this.peak = Object.fromEntries(Object.keys(this.rssPids).map((n) => [n, 0]));
    this.peakAnon = Object.fromEntries(Object.keys(this.rssPids).map((n) => [n, 0]));
    this.samples = 0;
    this.stat0 = Object.fromEntries(Object.entries(this.cpuPids).map(([n, pid]) => [n, procStat(pid)]));
    this.self0 = process.cpuUsage();
    this.machine0 = machineTicks();
    this.t0 = performance.now();
    this.sample();
    this.timer = setInterval(() => this.sample(), 50);
  }

  sample() {
    this.samples++;
    for (const [name, pid] of Object.entries(this.rssPids)) {
      const { rss, anon } = memory(pid);
      if (rss > this.peak[name]) this.peak[name] = rss;
      if (anon > this.peakAnon[name]) this.peakAnon[name] = anon;
    }
  }

  stop() {
    clearInterval(this.timer);
    this.sample();
    const seconds = (performance.now() - this.t0) / 1000;
    const self = process.cpuUsage(this.self0);
    const cpu = { client: (self.user + self.system) / 1e6 };
    const faults = {};
    for (const [name, pid] of Object.entries(this.cpuPids)) {
      const now = procStat(pid);
      cpu[name] = (now.ticks - this.stat0[name].ticks) / CLK_TCK;
      faults[name] = now.minflt - this.stat0[name].minflt;
    }
    const machine = machineTicks();
    const machineBusy = (machine.busy - this.machine0.busy) / CLK_TCK;
    const machineTotal = (machine.total - this.machine0.total) / CLK_TCK;
    const ours = Object.values(cpu).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
    cpu.other = Math.max(0, machineBusy - ours); // Postgres, Redis, ceph-mon, other users of the machine
    return {
      seconds,
      peakRss: this.peak,
      peakAnon: this.peakAnon,
      faults,
      samples: this.samples,
      cpu,
      machineBusyFraction: machineTotal > 0 ? machineBusy / machineTotal : NaN,
    };
  }
}

// ------------------------------------------------------------------ services ---
/** After a failed transfer (S3 restarted under us, say): waits until S3 and every service answer again. */
async function waitForStack() {
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      await s3.send(new HeadBucketCommand({ Bucket: S3.bucket }));
      await stack.checkReady();
      return;
    } catch (error) {
      if (Date.now() > deadline || String(error).includes('exited')) throw error;
      await sleep(1000);
    }
  }
}

// ------------------------------------------------------------------ the two sides ---
/** The direct baseline uses the S3 client settings of the storage service (S3ObjectClient). */
const s3 = benchS3Client(128);
const gatewayAgent = new Agent({ keepAlive: true, maxSockets: 16 });

/** The bucket belongs to the benchmark alone: whatever an earlier run left is removed, unfinished uploads too. */
async function emptyBucket() {
  await deleteAllObjects(s3);
  const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: S3.bucket }));
  for (const u of uploads.Uploads ?? [])
    await s3.send(new AbortMultipartUploadCommand({ Bucket: S3.bucket, Key: u.Key, UploadId: u.UploadId }));
}

/**
 * CPU seconds per GiB the bench process spends on the bytes themselves, outside any transfer: making them
 * (uploads) and comparing them in 64 KiB chunks (downloads). Taken off the direct client's CPU, it leaves
 * what the SDK spends on the S3 work, the baseline of the headline ratio.
 */
function clientDataCpuPerGiB(size) {
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  let started = cpu();
  let made = 0;
  for (const block of blocks(size)) made += block.length;
  if (made !== size) throw new Error(`made ${made} bytes, not ${size}`);
  const upload = ((cpu() - started) * GiB) / size;
  started = cpu();
  const verifier = new Verifier(size);
  for (const block of blocks(size))
    for (let at = 0; at < block.length; at += 64 * 1024) verifier.update(block.subarray(at, at + 64 * 1024));
  if (!verifier.ok) throw new Error('the verifier refused the generated bytes');
  const download = ((cpu() - started) * GiB) / size;
  return { upload, download };
}

async function directUpload(key, size, settings) {
  const upload = new Upload({
    client: s3,
    params: { Bucket: S3.bucket, Key: key, Body: Readable.from(blocks(size)), ContentType: 'application/octet-stream' },
    partSize: settings.partSize,
    queueSize: settings.queueSize,
    leavePartsOnError: false,
  });
  await upload.done();
  return { key };
}

async function directDownload(key, size) {
  const out = await s3.send(new GetObjectCommand({ Bucket: S3.bucket, Key: key }));
  const verifier = new Verifier(size);
  let bytes = 0;
  for await (const chunk of out.Body) {
    bytes += chunk.length;
    verifier.update(chunk);
  }
  return { bytes, contentOk: verifier.ok };
}

function readBody(res) {
  return new Promise((done, fail) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
    res.on('error', fail);
  });
}

/** POST /v1/files, multipart/form-data, chunked, streamed with node:http (to `port`: the bare hops take it too). */
function gatewayUpload(size, filename, port = PORT_BASE) {
  const boundary = `----uhp-bench-${randomBytes(16).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  function* body() {
    yield head;
    yield* blocks(size);
    yield tail;
  }
  return new Promise((done, fail) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/v1/files',
      method: 'POST',
      agent: gatewayAgent,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'transfer-encoding': 'chunked',
      },
    });
    req.on('response', (res) => {
      readBody(res).then((text) => {
        if (res.statusCode === 200) done(JSON.parse(text));
        else fail(new Error(`upload answered ${res.statusCode}: ${text.slice(0, 500)}`));
      }, fail);
    });
    req.on('error', fail);
    const source = Readable.from(body());
    source.on('error', fail);
    source.pipe(req);
  });
}

/** GET /v1/files/{id}/content, read fully and compared with the generated bytes. */
function gatewayDownload(id, size, { port = PORT_BASE, path = `/v1/files/${id}/content` } = {}) {
  return new Promise((done, fail) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      agent: gatewayAgent,
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200)
        return readBody(res).then(
          (t) => fail(new Error(`download answered ${res.statusCode}: ${t.slice(0, 500)}`)),
          fail,
        );
      const verifier = new Verifier(size);
      let bytes = 0;
      res.on('data', (chunk) => {
        bytes += chunk.length;
        verifier.update(chunk);
      });
      res.on('end', () =>
        done({ bytes, contentOk: verifier.ok, contentLength: Number(res.headers['content-length']) }),
      );
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end();
  });
}

function gatewayDelete(id) {
  return new Promise((done) => {
    const req = request({
      host: '127.0.0.1',
      port: PORT_BASE,
      path: `/v1/files/${id}`,
      method: 'DELETE',
      agent: gatewayAgent,
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode));
    });
    req.on('error', () => done(0));
    req.end();
  });
}

// ------------------------------------------------------------------ the run ---
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const mb = (bytes) => bytes / MB;

/** Now on the monotonic clock of `process.hrtime`, which is also the clock of every process's .cpuprofile. */
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

async function measure(monitor, fn) {
  monitor.start();
  const from = monotonicMicros();
  try {
    const result = await fn();
    return { result, window: [from, monotonicMicros()], ...monitor.stop() };
  } catch (error) {
    monitor.stop();
    throw error;
  }
}

async function main() {
  const settings = storageUploadSettings(SERVICE_ENV);
  const runId = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  console.log(
    `bench: sizes ${sizes.map((s) => s.label).join(', ')}; part size ${settings.partSize / MiB} MiB, queue size ${settings.queueSize}; S3 ${S3.endpoint} bucket ${S3.bucket}`,
  );

  const profileDir = join(RESULTS_DIR, `prof-${runId}`);
  if (CPU_PROFILE) {
    // Read by the stack and the bare hops when they start their processes.
    for (const knob of ['BENCH_NODE_ARGS', 'BENCH_BARE_NODE_ARGS'])
      process.env[knob] = `${process.env[knob] ?? ''} --cpu-prof --cpu-prof-dir=${profileDir}`.trim();
    console.log(`bench: profiled run, profiles in ${profileDir}`);
  }
  await ensureBucket(s3);
  await emptyBucket();
  await stack.start();
  const bare = await startBareHops({ port: PORT_BASE + 30, ...settings });
  const pids = { gateway: stack.pid('gateway'), storage: stack.pid('storage'), worker: stack.pid('worker') };
  const monitor = new Monitor({ gateway: pids.gateway, storage: pids.storage }, () => ({
    gateway: pids.gateway,
    storage: pids.storage,
    worker: pids.worker,
    'bare front': bare.pids.front,
    'bare back': bare.pids.back,
    ...cephPids(),
  }));
  console.log(
    `bench: services ready (gateway ${pids.gateway}, storage ${pids.storage}, worker ${pids.worker}) on ports ${PORT_BASE}-${PORT_BASE + 2}; logs in ${LOG_DIR}`,
  );

  mkdirSync(RESULTS_DIR, { recursive: true });
  const partialFile = join(RESULTS_DIR, `transfer-${runId}.partial.json`);
  const gatewayFiles = [];
  const directKeys = [];
  const runs = [];
  const idleRss = {};
  const clientDataCpu = {};
  let failures = 0;
  try {
    // Warm-up (not measured): connections, JIT, the first Prisma queries, and every part buffer an upload holds
    // at once (storage's pool allocates them once per process, lib-storage per upload). Without it the first
    // measured upload would pay the pool's page faults and look several times slower than the same upload later.
    {
      const size = (settings.queueSize + 2) * settings.partSize;
      makeRoomInLocalS3(3 * size);
      const file = await gatewayUpload(size, 'warmup.bin');
      gatewayFiles.push(file.id);
      await gatewayDownload(file.id, size);
      await directUpload(`bench/warmup-${runId}`, size, settings);
      directKeys.push(`bench/warmup-${runId}`);
      await directDownload(`bench/warmup-${runId}`, size);
      await bareTransfer(size, `warmup-${runId}.bin`, (fn) => fn());
    }

    for (const { label, bytes: size } of sizes) {
      const sha256 = expectedSha256(size);
      clientDataCpu[label] = clientDataCpuPerGiB(size);
      const reps = repsFor(size);
      idleRss[label] = { gateway: rssBytes(pids.gateway), storage: rssBytes(pids.storage) };
      console.log(
        `\nbench: ${label} (${size} bytes, sha256 ${sha256.slice(0, 16)}…), ${reps} repetitions; idle RSS gateway ${fmt(mb(idleRss[label].gateway))} MB, storage ${fmt(mb(idleRss[label].storage))} MB`,
      );
      for (let rep = 0; rep < reps; rep++) {
        makeRoomInLocalS3(3 * size);
        const order = rep % 2 === 0 ? ['direct', 'ours', 'bare'] : ['bare', 'ours', 'direct'];
        for (const side of order) {
          let up;
          let down;
          for (let attempt = 1; ; attempt++) {
            try {
              [up, down] = await transferBoth(side, label, size, sha256, rep);
              break;
            } catch (error) {
              if (attempt > 2) throw error;
              console.warn(
                `  rep ${rep + 1} ${side}: ${String(error?.message ?? error).slice(0, 300)}; waiting for S3 and the services, then again`,
              );
              await waitForStack();
            }
          }
          for (const [direction, m] of [
            ['upload', up],
            ['download', down],
          ]) {
            const run = {
              size: label,
              bytes: size,
              rep,
              side,
              direction,
              seconds: m.seconds,
              mbPerSecond: mb(size) / m.seconds,
              ok: m.ok,
              peakRss: m.peakRss,
              peakAnon: m.peakAnon,
              minorFaults: m.faults,
              cpu: m.cpu,
              machineBusyFraction: m.machineBusyFraction,
              samples: m.samples,
              window: m.window,
            };
            runs.push(run);
            if (!m.ok) failures++;
            const rss =
              side === 'ours' ? `  RSS gw ${fmt(mb(m.peakRss.gateway), 0)} st ${fmt(mb(m.peakRss.storage), 0)} MB` : '';
            const cpu = Object.entries(m.cpu)
              .filter(
                ([n]) =>
                  (side === 'ours' || !['gateway', 'storage', 'worker'].includes(n)) &&
                  (side === 'bare' || !n.startsWith('bare')),
              )
              .map(([n, v]) => `${n.replace('ceph-', '')} ${fmt(v, 1)}`)
              .join(' ');
            const faults = side === 'ours' ? `  faults gw ${m.faults.gateway} st ${m.faults.storage}` : '';
            console.log(
              `  rep ${rep + 1} ${side.padEnd(6)} ${direction.padEnd(8)} ${fmt(run.mbPerSecond).padStart(7)} MB/s ${fmt(m.seconds, 2).padStart(6)} s${m.ok ? '' : '  BYTES DO NOT MATCH'}${rss}  cpu s: ${cpu}${faults}`,
            );
          }
          writeFileSync(partialFile, JSON.stringify({ runId, settings, sizes, runs, idleRss }, null, 2));
        }
      }
    }
  } finally {
    for (const id of gatewayFiles) await gatewayDelete(id);
    for (const key of directKeys) await forget(key);
    await bare.stop();
    await stack.stop();
    await emptyBucket().catch((error) => console.warn(`bench: could not empty ${S3.bucket}: ${error}`));
  }

  /** One upload then one download of the same bytes, on one side; each measured on its own. */
  async function transferBoth(side, label, size, sha256, rep) {
    if (side === 'bare') {
      const [up, down] = await bareTransfer(size, `${runId}-${label}-${rep}.bin`, (fn) => measure(monitor, fn));
      up.ok = up.result.bytes === size && up.result.sha256 === sha256;
      down.ok = down.result.bytes === size && down.result.contentOk && down.result.contentLength === size;
      return [up, down];
    }
    if (side === 'direct') {
      const key = `bench/direct-${runId}-${label}-${rep}`;
      directKeys.push(key);
      const up = await measure(monitor, () => directUpload(key, size, settings));
      const head = await s3.send(new HeadObjectCommand({ Bucket: S3.bucket, Key: key }));
      up.ok = Number(head.ContentLength) === size;
      const down = await measure(monitor, () => directDownload(key, size));
      down.ok = down.result.bytes === size && down.result.contentOk;
      await forget(key);
      return [up, down];
    }
    const up = await measure(monitor, () => gatewayUpload(size, `bench-${label}-${rep}.bin`));
    gatewayFiles.push(up.result.id);
    up.ok = up.result.bytes === size && up.result.sha256 === sha256;
    const down = await measure(monitor, () => gatewayDownload(up.result.id, size));
    down.ok = down.result.bytes === size && down.result.contentOk && down.result.contentLength === size;
    await gatewayDelete(up.result.id);
    return [up, down];
  }

  /** The bare hops' upload, then their download of the same object; `timed` wraps each (measure, or not). */
  async function bareTransfer(size, filename, timed) {
    const key = `bench/bare-${filename}`;
    directKeys.push(key);
    const up = await timed(() => gatewayUpload(size, filename, PORT_BASE + 30));
    // As the gateway does: a URL signed for this one object (here by the benchmark), opened by the front.
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: S3.bucket, Key: key }), { expiresIn: 300 });
    const down = await timed(() =>
      gatewayDownload(null, size, { port: PORT_BASE + 30, path: `/read?from=${encodeURIComponent(url)}` }),
    );
    await forget(key);
    return [up, down];
  }

  /**
   * Each side's object goes as soon as it has been read back, not at the end: a run moves ~10 GiB, and the
   * local Ceph OSD (20 GiB) frees deleted objects only a minute or more later (rgw gc); keeping them all
   * filled it, and a full OSD blocks every write.
   */
  async function forget(key) {
    await s3.send(new DeleteObjectCommand({ Bucket: S3.bucket, Key: key })).catch(() => undefined);
  }

  const summary = summarize(runs, idleRss, clientDataCpu);
  const machine = machineFacts();
  const table = renderTable(summary);
  console.log(`\n${table}\n`);
  const reading = renderReading(summary);
  console.log(reading.join('\n'));
  console.log(`\n${renderCpuTable(summary)}`);
  const profiles = CPU_PROFILE
    ? profileBreakdown(runs, profileDir, {
        ...Object.fromEntries(Object.entries(pids).map(([name, pid]) => [pid, name])),
        [bare.pids.front]: 'bare front',
        [bare.pids.back]: 'bare back',
      })
    : null;
  if (profiles) console.log(`\n${renderProfileTable(profiles)}\n\n${renderHeaviest(profiles)}`);

  rmSync(partialFile, { force: true });
  const resultFile = join(RESULTS_DIR, `transfer-${runId}.json`);
  writeFileSync(
    resultFile,
    JSON.stringify({ runId, machine, settings, sizes, summary, runs, idleRss, profiles }, null, 2),
  );
  console.log(`\nbench: raw figures in ${resultFile}`);

  if (failures === 0 && profiles) reportBlock('transfer-profile', profileDocsOf(profiles));
  else if (failures === 0) reportBlock('transfer', docsOf(summary));
  if (failures > 0) {
    console.error(`bench: ${failures} transfer(s) returned the wrong bytes`);
    process.exitCode = 1;
  }
}

// ------------------------------------------------------------------ reporting ---
/** CPU seconds of the processes that do the transfer (everything but "other", the rest of the machine). */
const cpuTotal = (c) => Object.entries(c).reduce((a, [n, v]) => a + (n !== 'other' && Number.isFinite(v) ? v : 0), 0);

function summarize(runs, idleRss, clientDataCpu) {
  const out = [];
  for (const label of [...new Set(runs.map((r) => r.size))]) {
    for (const direction of ['upload', 'download']) {
      const pick = (side) => runs.filter((r) => r.size === label && r.direction === direction && r.side === side);
      const direct = pick('direct');
      const ours = pick('ours');
      const bare = pick('bare');
      const directMBs = median(direct.map((r) => r.mbPerSecond));
      const oursMBs = median(ours.map((r) => r.mbPerSecond));
      const cpuPerGiB = (rs) => {
        const bytes = rs.reduce((a, r) => a + r.bytes, 0);
        const names = [...new Set(rs.flatMap((r) => Object.keys(r.cpu)))];
        return Object.fromEntries(names.map((n) => [n, (rs.reduce((a, r) => a + (r.cpu[n] || 0), 0) * GiB) / bytes]));
      };
      out.push({
        size: label,
        bytes: direct[0]?.bytes ?? ours[0]?.bytes,
        direction,
        reps: { direct: direct.length, ours: ours.length },
        directMBs,
        oursMBs,
        ratio: oursMBs / directMBs,
        directAllMBs: direct.map((r) => r.mbPerSecond),
        oursAllMBs: ours.map((r) => r.mbPerSecond),
        peakRss: {
          gateway: Math.max(...ours.map((r) => r.peakRss.gateway)),
          storage: Math.max(...ours.map((r) => r.peakRss.storage)),
        },
        peakAnon: {
          gateway: Math.max(...ours.map((r) => r.peakAnon.gateway)),
          storage: Math.max(...ours.map((r) => r.peakAnon.storage)),
        },
        idleRss: idleRss[label],
        cpuPerGiB: { direct: cpuPerGiB(direct), ours: cpuPerGiB(ours), bare: bare.length ? cpuPerGiB(bare) : null },
        cpuRatio: cpuTotal(cpuPerGiB(direct)) / cpuTotal(cpuPerGiB(ours)),
        // The headline: our two services' CPU per GiB over the direct SDK client's own (its data work taken off).
        clientDataCpu: clientDataCpu[label][direction],
        sdkCpu: Math.max(0.01, (cpuPerGiB(direct).client ?? NaN) - clientDataCpu[label][direction]),
        servicesCpu: (cpuPerGiB(ours).gateway ?? NaN) + (cpuPerGiB(ours).storage ?? NaN),
        // The same work done by bare Node hops (bench/support/bare-hops.mjs): two for an upload, one for a download.
        bare: bare.length
          ? {
              front: cpuPerGiB(bare)['bare front'],
              back: cpuPerGiB(bare)['bare back'],
              cpu: cpuPerGiB(bare)['bare front'] + cpuPerGiB(bare)['bare back'],
              mbPerSecond: median(bare.map((r) => r.mbPerSecond)),
              reps: bare.length,
            }
          : null,
        faultsPerGiB: Object.fromEntries(
          ['gateway', 'storage'].map((n) => [
            n,
            (ours.reduce((a, r) => a + (r.minorFaults?.[n] || 0), 0) * GiB) / ours.reduce((a, r) => a + r.bytes, 0),
          ]),
        ),
        machineBusy: {
          direct: median(direct.map((r) => r.machineBusyFraction)),
          ours: median(ours.map((r) => r.machineBusyFraction)),
          bare: bare.length ? median(bare.map((r) => r.machineBusyFraction)) : NaN,
        },
      });
    }
  }
  return out;
}

function renderTable(summary) {
  const rows = [
    '| size | direction | **CPU/GiB gateway + storage ÷ direct SDK client** | gateway + storage s/GiB | direct client ' +
      's/GiB | bare Node hops s/GiB (front + back) | gateway + storage ÷ bare hops | direct MB/s (min–max) | ours MB/s (min–max) | ' +
      'ours / direct | CPU direct / ours (all processes) | peak RSS gateway | peak RSS storage | runs each |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const range = (xs) => (xs.length > 1 ? ` (${fmt(Math.min(...xs), 0)}–${fmt(Math.max(...xs), 0)})` : '');
  for (const s of summary) {
    rows.push(
      `| ${s.size} | ${s.direction} | **${fmt(s.servicesCpu / s.sdkCpu, 2)}** | ${fmt(s.servicesCpu, 2)} | ${fmt(s.sdkCpu, 2)} | ${s.bare ? `${fmt(s.bare.cpu, 2)} (${fmt(s.bare.front, 2)} + ${fmt(s.bare.back, 2)})` : '–'} | ${s.bare ? fmt(s.servicesCpu / s.bare.cpu, 2) : '–'} | ${fmt(s.directMBs)}${range(s.directAllMBs)} | ${fmt(s.oursMBs)}${range(s.oursAllMBs)} | ${fmt(s.ratio, 2)} | ${fmt(s.cpuRatio, 2)} | ${fmt(mb(s.peakRss.gateway))} MB | ${fmt(mb(s.peakRss.storage))} MB | ${s.reps.ours} |`,
    );
  }
  return rows.join('\n');
}

function renderCpuTable(summary) {
  const names = ['client', 'gateway', 'storage', 'bare front', 'bare back', 'radosgw', 'ceph-osd', 'worker', 'other'];
  const ownProcesses = { direct: [], ours: ['gateway', 'storage', 'worker'], bare: ['bare front', 'bare back'] };
  const rows = [
    `| size | direction | side | ${names.join(' | ')} | machine busy | page faults/GiB gateway, storage |`,
    `|---|---|---|${names.map(() => '---:').join('|')}|---:|---:|`,
  ];
  for (const s of summary) {
    for (const side of ['direct', 'ours', 'bare']) {
      const c = s.cpuPerGiB[side];
      if (!c) continue;
      const someonesOwn = Object.values(ownProcesses).flat();
      const cells = names.map((n) => (someonesOwn.includes(n) && !ownProcesses[side].includes(n) ? '–' : fmt(c[n], 2)));
      const faults =
        side === 'ours' ? `${fmt(s.faultsPerGiB.gateway / 1000, 0)}k, ${fmt(s.faultsPerGiB.storage / 1000, 0)}k` : '–';
      rows.push(
        `| ${s.size} | ${s.direction} | ${side} | ${cells.join(' | ')} | ${fmt(100 * s.machineBusy[side], 0)} % | ${faults} |`,
      );
    }
  }
  return rows.join('\n');
}

const RSS_LIMIT = { gateway: 150 * MB, storage: 200 * MB };
const RATIO_TARGET = 0.9;

const CPU_TARGET = { upload: 1.3, download: 1.0 };
const FLOOR_WORK = {
  upload: 'two bare Node hops doing the same work (busboy, one chunked PUT, SHA-256, part buffers, UploadPart)',
  download: 'one bare Node hop doing the same work (a GET of a signed S3 URL piped into the answer)',
};

function renderReading(summary) {
  const lines = [];
  for (const direction of ['upload', 'download']) {
    const rs = summary.filter((s) => s.direction === direction);
    const ratios = rs.map(
      (s) =>
        `${fmt(s.servicesCpu / s.sdkCpu, 2)} at ${s.size} (${fmt(s.servicesCpu, 2)} s vs ${fmt(s.sdkCpu, 2)} s; the bench's own data work, ${fmt(s.clientDataCpu, 2)} s/GiB, taken off the client)`,
    );
    const met = rs.every((s) => s.servicesCpu / s.sdkCpu <= CPU_TARGET[direction]);
    lines.push(
      `- **${direction}, CPU per GiB of gateway + storage ÷ direct SDK client: ${ratios.join(', ')}** — target ≤ ${CPU_TARGET[direction]} ${met ? 'met' : 'missed'}.`,
    );
    const withBare = rs.filter((s) => s.bare);
    if (withBare.length)
      lines.push(
        `- ${direction}, the floor: ${FLOOR_WORK[direction]} cost ${withBare
          .map(
            (s) =>
              `${fmt(s.bare.cpu, 2)} s/GiB at ${s.size} (front ${fmt(s.bare.front, 2)}, back ${fmt(s.bare.back, 2)}; ${fmt(s.bare.cpu / s.sdkCpu, 2)}× the direct SDK client; ${fmt(s.bare.mbPerSecond)} MB/s)`,
          )
          .join(
            ', ',
          )}; our gateway + storage cost ${withBare.map((s) => `${fmt(s.servicesCpu / s.bare.cpu, 2)}× that at ${s.size}`).join(', ')}.`,
      );
  }
  for (const direction of ['upload', 'download']) {
    const rs = summary.filter((s) => s.direction === direction);
    const misses = rs.filter((s) => !(s.ratio >= RATIO_TARGET));
    lines.push(
      `- ${direction}: ours / direct ${rs.map((s) => `${fmt(s.ratio, 2)} at ${s.size}`).join(', ')} — target ≥ ${RATIO_TARGET} ${misses.length ? `missed (${misses.map((s) => s.size).join(', ')})` : 'met'}.`,
    );
  }
  for (const service of ['gateway', 'storage']) {
    const bySize = [...new Set(summary.map((s) => s.size))].map((size) => {
      const rs = summary.filter((s) => s.size === size);
      return {
        size,
        peak: Math.max(...rs.map((s) => s.peakRss[service])),
        anon: Math.max(...rs.map((s) => s.peakAnon[service])),
        idle: rs[0].idleRss?.[service],
      };
    });
    const worst = Math.max(...bySize.map((b) => b.peak));
    lines.push(
      `- peak RSS ${service}: ${bySize.map((b) => `${fmt(mb(b.peak))} MB at ${b.size} (idle before: ${fmt(mb(b.idle))} MB; peak private/anon: ${fmt(mb(b.anon))} MB)`).join(', ')} — target < ${fmt(mb(RSS_LIMIT[service]), 0)} MB ${worst < RSS_LIMIT[service] ? 'met' : 'missed'}.`,
    );
  }
  const sizesSorted = [...new Set(summary.map((s) => s.size))];
  if (sizesSorted.length > 1) {
    const first = summary.filter((s) => s.size === sizesSorted[0]);
    const last = summary.filter((s) => s.size === sizesSorted[sizesSorted.length - 1]);
    const growth = (service) =>
      Math.max(...last.map((s) => s.peakRss[service])) - Math.max(...first.map((s) => s.peakRss[service]));
    lines.push(
      `- memory vs file size: from ${sizesSorted[0]} to ${sizesSorted[sizesSorted.length - 1]} (${fmt(last[0].bytes / first[0].bytes, 0)}× the bytes) the peak RSS moved by ${fmt(mb(growth('gateway')))} MB (gateway) and ${fmt(mb(growth('storage')))} MB (storage).`,
    );
  }
  for (const s of summary) {
    const d = s.cpuPerGiB.direct;
    const o = s.cpuPerGiB.ours;
    const sum = cpuTotal;
    lines.push(
      `- CPU per GiB, ${s.size} ${s.direction}: direct ${fmt(sum(d), 1)} s (client ${fmt(d.client, 1)}, radosgw ${fmt(d.radosgw, 1)}, osd ${fmt(d['ceph-osd'], 1)}); ours ${fmt(sum(o), 1)} s (client ${fmt(o.client, 1)}, gateway ${fmt(o.gateway, 1)}, storage ${fmt(o.storage, 1)}, radosgw ${fmt(o.radosgw, 1)}, osd ${fmt(o['ceph-osd'], 1)}); rest of the machine ${fmt(d.other, 1)} s vs ${fmt(o.other, 1)} s; machine busy ${fmt(100 * s.machineBusy.direct, 0)} % vs ${fmt(100 * s.machineBusy.ours, 0)} %.`,
    );
  }
  return lines;
}

function machineFacts() {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim();
    } catch {
      return 'unknown';
    }
  };
  let os = 'Linux';
  try {
    os = /PRETTY_NAME="([^"]+)"/.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? os;
  } catch {
    // keep the default
  }
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    nproc: cpus().length,
    cpuModel: cpus()[0]?.model?.trim() ?? 'unknown',
    memoryGiB: totalmem() / GiB,
    node: process.version,
    os,
    commit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain') ? ' (uncommitted changes in the tree)' : ''}`,
    s3: `Ceph radosgw at ${S3.endpoint} (infra/local/s3.sh)`,
    knobs: ['BENCH_NODE_ARGS', 'BENCH_SERVICE_ENV', 'S3_PART_SIZE_BYTES', 'S3_UPLOAD_QUEUE_SIZE', 'BENCH_REPS']
      .filter((k) => process.env[k])
      .map((k) => `${k}=${process.env[k]}`),
    sdk: `@aws-sdk/client-s3 ${require('@aws-sdk/client-s3/package.json').version}, @aws-sdk/lib-storage ${require('@aws-sdk/lib-storage/package.json').version}`,
  };
}

// ------------------------------------------------------------------ profiles (BENCH_CPU_PROFILE=1) ---
const PROFILED = { ours: ['gateway', 'storage'], bare: ['bare front', 'bare back'] };
const KIND_HEADERS = {
  'garbage collection': 'GC',
  'native, outside JS': 'native (outside JS)',
  'SHA-256': 'SHA-256',
  'buffer copies': 'buffer copies',
  'socket I/O': 'socket I/O',
  'HTTP and multipart parsing': 'HTTP + multipart parsing',
  'Node streams': 'Node streams',
  'AWS SDK': 'AWS SDK',
  'own code': 'own code',
  'framework and other libraries': 'framework + other libraries',
  'other Node internals': 'other Node internals',
  other: 'other',
};

/**
 * CPU per GiB by kind of work, per process, over exactly the measured transfers: each run's window selects its
 * samples in the process's profile. Rows for gateway and storage, the bare front and back, and "ours − bare",
 * the difference of the two sides' sums (what our services spend above the floor, kind by kind).
 */
function profileBreakdown(runs, dir, namesByPid) {
  const profiles = new Map();
  for (const file of existsSync(dir) ? readdirSync(dir) : []) {
    const [, , , pid, thread] = file.split('.'); // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile
    const name = namesByPid[pid];
    // Thread 0 is the main thread, the one that moves the bytes.
    if (file.endsWith('.cpuprofile') && thread === '0' && name && name !== 'worker')
      profiles.set(name, readProfile(join(dir, file)));
  }
  const rows = [];
  for (const size of [...new Set(runs.map((r) => r.size))]) {
    for (const direction of ['upload', 'download']) {
      const sums = {};
      for (const [side, names] of Object.entries(PROFILED)) {
        const picked = runs.filter((r) => r.size === size && r.direction === direction && r.side === side);
        const bytes = picked.reduce((sum, r) => sum + r.bytes, 0);
        const perGiB = (micros) => (micros / 1e6) * (GiB / bytes);
        sums[side] = { busy: 0, kinds: {} };
        for (const name of names) {
          const profile = profiles.get(name);
          if (!profile || !bytes) {
            console.warn(`bench: no profile of ${name} for ${size} ${direction}`);
            continue;
          }
          const { busy, kinds, functions } = breakdown(
            profile,
            selfTimeWithin(
              profile,
              picked.map((r) => r.window),
            ),
          );
          const row = {
            size,
            direction,
            process: name,
            runs: picked.length,
            busy: perGiB(busy),
            kinds: Object.fromEntries(kinds.map(([kind, micros]) => [kind, perGiB(micros)])),
            heaviest: functions.slice(0, 8).map(([fn, micros]) => ({ fn, seconds: perGiB(micros) })),
          };
          rows.push(row);
          sums[side].busy += row.busy;
          for (const [kind, value] of Object.entries(row.kinds))
            sums[side].kinds[kind] = (sums[side].kinds[kind] ?? 0) + value;
        }
      }
      if (sums.ours && sums.bare)
        rows.push({
          size,
          direction,
          process: 'ours − bare',
          busy: sums.ours.busy - sums.bare.busy,
          kinds: Object.fromEntries(
            KIND_NAMES.map((kind) => [kind, (sums.ours.kinds[kind] ?? 0) - (sums.bare.kinds[kind] ?? 0)]),
          ),
          heaviest: [],
        });
    }
  }
  return rows;
}

function renderProfileTable(rows) {
  const signed = (x, difference) => (difference && x > 0.005 ? `+${fmt(x, 2)}` : fmt(x, 2));
  const lines = [
    `| size | direction | process | CPU s/GiB (profiled) | ${KIND_NAMES.map((k) => KIND_HEADERS[k]).join(' | ')} |`,
    `|---|---|---|---:|${KIND_NAMES.map(() => '---:').join('|')}|`,
  ];
  for (const row of rows) {
    const difference = row.process === 'ours − bare';
    const name = difference ? '**ours − bare**' : row.process;
    lines.push(
      `| ${row.size} | ${row.direction} | ${name} | ${signed(row.busy, difference)} | ${KIND_NAMES.map((k) => signed(row.kinds[k] ?? 0, difference)).join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

/** "update node:internal/crypto/hash:132" → "`update` (hash:132)". */
function shortFunction(fn) {
  const named = fn.match(/^(.*) (\S+:\d+)$/);
  return named ? `\`${named[1]}\` (${named[2].split('/').pop()})` : `\`${fn}\``;
}

function renderHeaviest(rows) {
  return rows
    .filter((row) => row.heaviest.length)
    .map(
      (row) =>
        `- ${row.size} ${row.direction}, ${row.process}: ${row.heaviest
          .slice(0, 6)
          .map(({ fn, seconds }) => `${shortFunction(fn)} ${fmt(seconds, 2)}`)
          .join(', ')}`,
    )
    .join('\n');
}

/** The profiled block: each process's kinds of work, and per transfer ours − bare with the ratio of the totals. */
function profileDocsOf(rows) {
  const signed = (x, difference) => (difference && x > 0.005 ? `+${fmt(x, 2)}` : fmt(x, 2));
  const busyOf = (row, names) =>
    rows
      .filter((r) => r.size === row.size && r.direction === row.direction && names.includes(r.process))
      .reduce((sum, r) => sum + r.busy, 0);
  return {
    machine: machineLine(),
    command: commandOf('transfer-profile'),
    rows: rows.map((row) => {
      const difference = row.process === 'ours − bare';
      return [
        row.size,
        row.direction,
        difference ? '**ours − bare**' : row.process,
        difference ? `**${fmt(busyOf(row, PROFILED.ours) / busyOf(row, PROFILED.bare), 2)}**` : '–',
        signed(row.busy, difference),
        ...KIND_NAMES.map((kind) => signed(row.kinds[kind] ?? 0, difference)),
      ];
    }),
  };
}

/** The unprofiled block: per size and direction, ours against the direct client and the bare hops. */
function docsOf(summary) {
  const range = (xs) => (xs.length > 1 ? ` (${fmt(Math.min(...xs), 0)}–${fmt(Math.max(...xs), 0)})` : '');
  return {
    machine: machineLine(),
    command: commandOf('transfer'),
    rows: summary.map((s) => [
      s.size,
      s.direction,
      `**${fmt(s.servicesCpu / s.sdkCpu, 2)}**`,
      s.bare ? fmt(s.servicesCpu / s.bare.cpu, 2) : '–',
      fmt(s.ratio, 2),
      fmt(s.servicesCpu, 2),
      fmt(s.sdkCpu, 2),
      s.bare ? fmt(s.bare.cpu, 2) : '–',
      `${fmt(s.oursMBs)}${range(s.oursAllMBs)}`,
      `${fmt(s.directMBs)}${range(s.directAllMBs)}`,
      `${fmt(mb(s.peakRss.gateway))} MB`,
      `${fmt(mb(s.peakRss.storage))} MB`,
      String(s.reps.ours),
    ]),
  };
}

main().catch(async (error) => {
  console.error(`bench: ${error?.stack ?? error}`);
  await stack.stop().catch(() => undefined);
  process.exit(1);
});
