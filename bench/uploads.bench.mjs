#!/usr/bin/env node
/**
 * Resumable-upload benchmark (issue 14): one file sent through the gateway as OpenAI-shaped upload parts
 * (POST /v1/uploads, parts of 64 MiB, 8 in flight, named front to back, then complete: the parts are blocks
 * of the upload's own S3 multipart upload, so completion is one CompleteMultipartUpload and the worker hashes
 * the file afterwards) against a direct @aws-sdk/lib-storage upload of the same bytes to the same S3 server
 * (64 MiB parts, 8 in flight), taking turns, BENCH_ROUNDS times (default 2). Prints per round the time of
 * each phase, the throughput ratio (direct time / ours; the issue asks for >= 0.9), CPU seconds per GiB of
 * gateway + storage against the direct client's own (data generation excluded), and the peak RSS (VmHWM)
 * of the gateway and storage processes.
 *
 *   node bench/uploads.bench.mjs              (normally `bash bench/run.sh uploads`)
 *
 * BENCH_UPLOAD_SIZE (default 2GiB), BENCH_PART_SIZE (default 64MiB), BENCH_IN_FLIGHT (default 8).
 * Before the rounds, one unmeasured 256 MiB upload each way warms both sides up (JIT, connection pools, the
 * storage service's part buffers and the allocator's first faults); BENCH_WARMUP=0 skips it.
 * Prints its section of docs/benchmarks.md; `--write-docs` (or BENCH_WRITE_DOCS=1) also writes it there.
 * A measurement, not a test: it exits non-zero only when a transfer fails or the file's SHA-256 is wrong.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
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
  S3,
  serviceEnv,
  ServiceStack,
} from './support/stack.mjs';

let SIZE = parseSize(process.env.BENCH_UPLOAD_SIZE ?? '2GiB').bytes;
const PART = parseSize(process.env.BENCH_PART_SIZE ?? '64MiB').bytes;
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 8);
let PARTS = Math.ceil(SIZE / PART);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const TICK = 100; // USER_HZ on Linux

/** CPU seconds a process has used so far (utime + stime). */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}
const selfCpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};
const MB = 1e6;

/** Part `index` of the file: an AES-CTR keystream, so any part can be made on its own, in any order. */
function partBytes(index) {
  const length = Math.min(PART, SIZE - index * PART);
  const iv = Buffer.alloc(16);
  iv.writeUInt32BE(index, 0);
  return createCipheriv('aes-128-ctr', Buffer.alloc(16, 7), iv).update(Buffer.alloc(length));
}

const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT * 2 });
function call(method, path, { json, part } = {}) {
  return new Promise((resolve, reject) => {
    const boundary = 'benchBoundary0123456789';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="part"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const body = json ? Buffer.from(JSON.stringify(json)) : null;
    const req = request(`${API_BASE}${path}`, {
      method,
      agent,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        ...(json ? { 'content-type': 'application/json', 'content-length': body.length } : {}),
        ...(part
          ? {
              'content-type': `multipart/form-data; boundary=${boundary}`,
              'content-length': head.length + part.length + tail.length,
            }
          : {}),
      },
    });
    req.on('response', async (res) => {
      let text = '';
      for await (const chunk of res) text += chunk;
      if (res.statusCode !== 200) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`));
      else resolve(JSON.parse(text));
    });
    req.on('error', reject);
    if (part) {
      req.write(head);
      req.write(part);
      req.end(tail);
    } else req.end(body ?? undefined);
  });
}

async function viaGateway() {
  const cpuBefore = { gateway: cpuSeconds(stack.pid('gateway')), storage: cpuSeconds(stack.pid('storage')) };
  const started = performance.now();
  const upload = await call('POST', '/v1/uploads', {
    json: { filename: 'bench.bin', purpose: 'user_data', bytes: SIZE, mime_type: 'application/octet-stream' },
  });
  const ids = new Array(PARTS);
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < PARTS) {
        const index = next++;
        ids[index] = (await call('POST', `/v1/uploads/${upload.id}/parts`, { part: partBytes(index) })).id;
      }
    }),
  );
  const partsDone = performance.now();
  const completed = await call('POST', `/v1/uploads/${upload.id}/complete`, { json: { part_ids: ids } });
  const done = performance.now();
  const cpuGateway = cpuSeconds(stack.pid('gateway')) - cpuBefore.gateway;
  const cpuStorage = cpuSeconds(stack.pid('storage')) - cpuBefore.storage;
  const hashBefore = { worker: cpuSeconds(stack.pid('worker')), storage: cpuSeconds(stack.pid('storage')) };
  // The file is "uploaded" at once; the worker measures its SHA-256 next (downloads work meanwhile).
  let file = completed.file;
  while (file.status !== 'processed') {
    await new Promise((resolve) => setTimeout(resolve, 100));
    file = await call('GET', `/v1/files/${file.id}`);
  }
  const processed = performance.now();
  const cpuHash =
    cpuSeconds(stack.pid('worker')) - hashBefore.worker + cpuSeconds(stack.pid('storage')) - hashBefore.storage;
  await call('DELETE', `/v1/files/${file.id}`);
  return {
    seconds: (done - started) / 1000,
    partsSeconds: (partsDone - started) / 1000,
    completeSeconds: (done - partsDone) / 1000,
    hashedSeconds: (processed - done) / 1000,
    status: completed.file.status,
    cpu: cpuGateway + cpuStorage,
    cpuGateway,
    cpuStorage,
    cpuHash,
    file,
  };
}

async function direct(s3) {
  const cpuBefore = selfCpu();
  const started = performance.now();
  const body = Readable.from(
    (function* () {
      for (let index = 0; index < PARTS; index++) yield partBytes(index);
    })(),
  );
  const key = `bench-direct/${Date.now()}`;
  await new Upload({
    client: s3,
    params: { Bucket: S3.bucket, Key: key, Body: body },
    partSize: PART,
    queueSize: IN_FLIGHT,
  }).done();
  const seconds = (performance.now() - started) / 1000;
  const cpu = selfCpu() - cpuBefore;
  await s3.send(new DeleteObjectCommand({ Bucket: S3.bucket, Key: key }));
  return { seconds, cpu };
}

/** The expected SHA-256, and the CPU the bench spends making the bytes (taken off the direct client's CPU). */
function expected() {
  const hash = createHash('sha256');
  let generating = 0;
  for (let index = 0; index < PARTS; index++) {
    const before = selfCpu();
    const bytes = partBytes(index);
    generating += selfCpu() - before;
    hash.update(bytes);
  }
  return { sha256: hash.digest('hex'), generating };
}

const peakRss = (pid) => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return Number(line.split(/\s+/)[1]) * 1024;
};

const budget = Number(process.env.STORAGE_MEMORY_BUDGET_BYTES ?? 256 * MiB);
const stack = new ServiceStack(
  serviceEnv({ UHP_MAX_FILE_BYTES: String(SIZE), STORAGE_MEMORY_BUDGET_BYTES: String(budget) }),
  'uploads-',
);
const s3 = benchS3Client(IN_FLIGHT * 2);
await ensureBucket(s3);
await deleteAllObjects(s3);
// the gateway's upload and the direct one
makeRoomInLocalS3(2 * SIZE);
await stack.start();
try {
  const { sha256, generating } = expected();
  if (process.env.BENCH_WARMUP !== '0') {
    const full = { size: SIZE, parts: PARTS };
    SIZE = Math.min(SIZE, 256 * MiB);
    PARTS = Math.ceil(SIZE / PART);
    await direct(s3);
    await viaGateway();
    ({ size: SIZE, parts: PARTS } = full);
  }
  const GiBs = SIZE / (1024 * MiB);
  const rounds = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const directRun = await direct(s3);
    const ours = await viaGateway();
    if (ours.file.sha256 !== sha256 || ours.file.bytes !== SIZE)
      throw new Error('the file does not match the bytes sent');
    rounds.push({ directRun, ours, directCpu: Math.max(0.01, directRun.cpu - generating) });
    const mbps = (seconds) => (SIZE / MB / seconds).toFixed(1);
    const directCpu = Math.max(0.01, directRun.cpu - generating);
    console.log(
      `round ${round}: file ${(SIZE / MiB).toFixed(0)} MiB as ${PARTS} parts of ${PART / MiB} MiB, ${IN_FLIGHT} in flight`,
    );
    console.log(`  direct lib-storage upload: ${directRun.seconds.toFixed(1)} s (${mbps(directRun.seconds)} MB/s)`);
    console.log(
      `  gateway /v1/uploads: ${ours.seconds.toFixed(1)} s (${mbps(ours.seconds)} MB/s) = parts ${ours.partsSeconds.toFixed(1)} s + complete ${ours.completeSeconds.toFixed(2)} s; file "${ours.status}" at completion, "processed" (hashed by the worker) ${ours.hashedSeconds.toFixed(1)} s later`,
    );
    console.log(
      `  ratio direct time / ours (whole upload incl. completion): ${(directRun.seconds / ours.seconds).toFixed(2)}`,
    );
    console.log(
      `  CPU per GiB: gateway + storage ${(ours.cpu / GiBs).toFixed(2)} s (gateway ${(ours.cpuGateway / GiBs).toFixed(2)}, storage ${(ours.cpuStorage / GiBs).toFixed(2)}), direct client ${(directCpu / GiBs).toFixed(2)} s (bytes' generation, ${(generating / GiBs).toFixed(2)} s/GiB, taken off); ratio ${(ours.cpu / directCpu).toFixed(2)}; the hash afterwards (worker + storage) ${(ours.cpuHash / GiBs).toFixed(2)} s`,
    );
  }
  const rss = { gateway: peakRss(stack.pid('gateway')), storage: peakRss(stack.pid('storage')) };
  const seconds = (s) => `${s.toFixed(1)} s`;
  const rate = (s) => `${(SIZE / MB / s).toFixed(0)} MB/s`;
  reportBlock('uploads', {
    machine: machineLine(),
    command: commandOf('uploads'),
    rows: rounds.map(({ directRun, ours, directCpu }, i) => [
      String(i + 1),
      `**${(directRun.seconds / ours.seconds).toFixed(2)}**`,
      (ours.cpu / directCpu).toFixed(2),
      `${seconds(ours.partsSeconds)} + ${ours.completeSeconds.toFixed(2)} s (${rate(ours.seconds)})`,
      `${seconds(directRun.seconds)} (${rate(directRun.seconds)})`,
      `+${seconds(ours.hashedSeconds)}`,
      (ours.cpu / GiBs).toFixed(2),
      (directCpu / GiBs).toFixed(2),
    ]),
    notes: [
      `${(SIZE / MiB).toFixed(0)} MiB as ${PARTS} × ${PART / MiB} MiB parts, ${IN_FLIGHT} in flight; part-buffer ` +
        `budget ${(budget / MiB).toFixed(0)} MiB; ${process.env.BENCH_WARMUP === '0' ? 'no' : '256 MiB'} warm-up.`,
      `gateway ${(rss.gateway / MiB).toFixed(0)} MiB, storage ${(rss.storage / MiB).toFixed(0)} MiB.`,
    ],
  });
} finally {
  await stack.stop();
  await deleteAllObjects(s3).catch(() => undefined);
}
