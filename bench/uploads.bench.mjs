#!/usr/bin/env node
/**
 * Resumable-upload benchmark (issue 14): one file sent through the gateway as OpenAI-shaped upload parts
 * (POST /v1/uploads, parts of 64 MiB, 8 in flight, then complete: storage composes the parts on the S3 side
 * and hashes the result) side by side with a direct @aws-sdk/lib-storage upload of the same bytes to the same
 * S3 server (64 MiB parts, 8 in flight), in one run. Prints the time of each phase, the throughput ratio
 * (ours / direct; the issue asks for >= 0.9) and the peak RSS (VmHWM) of the gateway and storage processes.
 *
 *   node bench/uploads.bench.mjs              (normally `bash bench/run.sh uploads`)
 *
 * BENCH_UPLOAD_SIZE (default 2GiB), BENCH_PART_SIZE (default 64MiB), BENCH_IN_FLIGHT (default 8).
 * A measurement, not a test: it exits non-zero only when a transfer fails or the file's SHA-256 is wrong.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import {
  API_BASE,
  API_KEY,
  benchS3Client,
  deleteAllObjects,
  ensureBucket,
  MiB,
  parseSize,
  S3,
  serviceEnv,
  ServiceStack,
} from './support/stack.mjs';

const SIZE = parseSize(process.env.BENCH_UPLOAD_SIZE ?? '2GiB').bytes;
const PART = parseSize(process.env.BENCH_PART_SIZE ?? '64MiB').bytes;
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 8);
const PARTS = Math.ceil(SIZE / PART);
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
  return {
    seconds: (done - started) / 1000,
    partsSeconds: (partsDone - started) / 1000,
    completeSeconds: (done - partsDone) / 1000,
    file: completed.file,
  };
}

async function direct(s3, hash) {
  const started = performance.now();
  const body = Readable.from(
    (function* () {
      for (let index = 0; index < PARTS; index++) {
        const bytes = partBytes(index);
        hash.update(bytes);
        yield bytes;
      }
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
  await s3.send(new DeleteObjectCommand({ Bucket: S3.bucket, Key: key }));
  return { seconds };
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
await stack.start();
try {
  const hash = createHash('sha256');
  const directRun = await direct(s3, hash);
  const ours = await viaGateway();
  const sha256 = hash.digest('hex');
  if (ours.file.sha256 !== sha256 || ours.file.bytes !== SIZE)
    throw new Error('the file does not match the bytes sent');
  const mbps = (seconds) => (SIZE / MB / seconds).toFixed(1);
  const rss = { gateway: peakRss(stack.pid('gateway')), storage: peakRss(stack.pid('storage')) };
  console.log(`file: ${(SIZE / MiB).toFixed(0)} MiB as ${PARTS} parts of ${PART / MiB} MiB, ${IN_FLIGHT} in flight`);
  console.log(`direct lib-storage upload: ${directRun.seconds.toFixed(1)} s (${mbps(directRun.seconds)} MB/s)`);
  console.log(
    `gateway /v1/uploads: ${ours.seconds.toFixed(1)} s (${mbps(ours.seconds)} MB/s) = parts ${ours.partsSeconds.toFixed(1)} s + complete ${ours.completeSeconds.toFixed(1)} s`,
  );
  console.log(
    `ratio ours/direct (throughput, whole upload incl. completion): ${(directRun.seconds / ours.seconds).toFixed(2)}`,
  );
  console.log(`ratio ours/direct (parts phase only): ${(directRun.seconds / ours.partsSeconds).toFixed(2)}`);
  console.log(
    `peak RSS: gateway ${(rss.gateway / MiB).toFixed(0)} MiB, storage ${(rss.storage / MiB).toFixed(0)} MiB (storage budget ${(budget / MiB).toFixed(0)} MiB)`,
  );
} finally {
  await stack.stop();
  await deleteAllObjects(s3).catch(() => undefined);
}
