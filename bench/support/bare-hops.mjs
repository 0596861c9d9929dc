/**
 * The floor under our byte path, built from nothing but Node and the libraries that path cannot do
 * without: two bare HTTP hops doing the very work the gateway and the storage service must do for a
 * `POST /v1/files`, and the one hop a download takes, and nothing else (no framework, no database, no
 * logging, no metrics, no limits).
 *
 * - **front** (the gateway's share): parses the multipart/form-data body with busboy, as the gateway does,
 *   and streams the file part to `back` in one chunked PUT over a keep-alive connection. A `GET /read?from=URL`
 *   is a download: it opens the URL (one the benchmark signed for the object, as the storage service signs
 *   one for the gateway) and pipes S3's answer into its own.
 * - **back** (the storage service's share): SHA-256 of every byte, the bytes copied into part buffers
 *   reused for the whole run (at most `budgetBytes` of them in all uploads together, as the storage
 *   service's STORAGE_MEMORY_BUDGET_BYTES; no limit when it is not given), each full buffer sent as an
 *   S3 `UploadPart` (up to `queueSize` at once) by an `@aws-sdk/client-s3` client with the storage
 *   service's settings (keep-alive, no per-part checksums, `UNSIGNED-PAYLOAD` since the body is hashed
 *   once already), then `CompleteMultipartUpload`. Answers `{ bytes, sha256 }`.
 *
 * The transfer benchmark runs it beside ours and the direct SDK client, in the same run, so the CPU our two
 * services spend per GiB can be read against what the same work costs in bare Node on this machine.
 *
 *   startBareHops({ port, partSize, queueSize, budgetBytes }) → { pids: { front, back }, stop() }
 *   (front on `port`, back on `port + 1`)
 */
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);

export async function startBareHops({ port, partSize, queueSize, budgetBytes }) {
  const settings = JSON.stringify({ port, partSize, queueSize, budgetBytes: budgetBytes ?? null });
  const children = [];
  const start = (role) =>
    new Promise((resolve, reject) => {
      const child = fork(SELF, [role, settings], {
        execArgv: (process.env.BENCH_BARE_NODE_ARGS ?? '').split(' ').filter(Boolean),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      child.once('message', () => resolve(child));
      child.once('exit', (code) => reject(new Error(`bare ${role} hop exited with ${code} during start`)));
    });
  const back = await start('back');
  const front = await start('front');
  return {
    pids: { front: front.pid, back: back.pid },
    /** SIGTERM first, so that a hop started with `--cpu-prof` exits on its own and writes its profile. */
    stop: () =>
      Promise.all(
        children.map(
          (child) =>
            new Promise((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
              child.once('exit', () => {
                clearTimeout(kill);
                resolve();
              });
              child.kill('SIGTERM');
            }),
        ),
      ),
  };
}

function runFront({ port }) {
  // Loaded here so that importing this module costs the benchmark nothing.
  return import('busboy').then(({ default: busboy }) => {
    const agent = new http.Agent({ keepAlive: true });
    // A hundred uploads at once, each waiting its turn for a part buffer in the back, outlast Node's 300 s
    // request timeout.
    http
      .createServer({ requestTimeout: 0 }, (req, res) => {
        const fail = (error) => {
          if (!res.headersSent) res.writeHead(500).end(String(error?.message ?? error));
        };
        if (req.method === 'GET') {
          // A download: the URL the benchmark signed for the object, opened and piped into the answer.
          const from = new URL(req.url, 'http://front').searchParams.get('from');
          http
            .get(from, { agent }, (answer) => {
              res.writeHead(answer.statusCode, { 'content-length': answer.headers['content-length'] });
              answer.pipe(res);
            })
            .on('error', fail);
          return;
        }
        const parser = busboy({ headers: req.headers });
        parser.on('file', (_name, file, info) => {
          const forward = http.request({
            host: '127.0.0.1',
            port: port + 1,
            method: 'PUT',
            path: `/${encodeURIComponent(`bench/bare-${info.filename}`)}`,
            agent,
            headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
          });
          forward.on('response', (answer) => {
            const chunks = [];
            answer.on('data', (c) => chunks.push(c));
            answer.on('end', () => {
              if (!res.headersSent)
                res.writeHead(answer.statusCode, { 'content-type': 'application/json' }).end(Buffer.concat(chunks));
            });
          });
          forward.on('error', fail);
          file.pipe(forward);
        });
        parser.on('error', fail);
        req.pipe(parser);
      })
      .listen(port, '127.0.0.1', () => process.send('up'));
  });
}

async function runBack({ port, partSize, queueSize, budgetBytes }) {
  const {
    CreateMultipartUploadCommand,
    UploadPartCommand,
    CompleteMultipartUploadCommand,
    AbortMultipartUploadCommand,
    PutObjectCommand,
  } = await import('@aws-sdk/client-s3');
  // The benchmark's own client settings, which are the storage service's (keep-alive, no per-part checksums).
  const { benchS3Client, S3 } = await import('./stack.mjs');
  const s3 = benchS3Client(16);
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UploadPartCommand' || context.commandName === 'PutObjectCommand')
        args.request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'bareUnsignedPayload' },
  );
  const spare = [];
  const waiting = [];
  let allocated = 0;
  /** A part buffer: a spare one, a new one while the budget allows, or the next one given back. */
  const take = async () => {
    const reused = spare.pop();
    if (reused) return reused;
    if (budgetBytes === null || allocated + partSize <= budgetBytes || allocated === 0) {
      allocated += partSize;
      return Buffer.allocUnsafeSlow(partSize);
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const giveBack = (buffer) => {
    const next = waiting.shift();
    if (next) next(buffer);
    else spare.push(buffer);
  };
  const Bucket = S3.bucket;

  async function store(Key, body) {
    const hash = createHash('sha256');
    let bytes = 0;
    let uploadId = null;
    let creating = null;
    const parts = [];
    const inFlight = new Set();
    let buffer = await take();
    let filled = 0;
    const send = async (part, length, PartNumber) => {
      try {
        // One CreateMultipartUpload however many parts are waiting for it.
        creating ??= s3
          .send(new CreateMultipartUploadCommand({ Bucket, Key }))
          .then((out) => (uploadId = out.UploadId));
        await creating;
        const out = await s3.send(
          new UploadPartCommand({
            Bucket,
            Key,
            UploadId: uploadId,
            PartNumber,
            Body: part.subarray(0, length),
            ContentLength: length,
          }),
        );
        parts.push({ PartNumber, ETag: out.ETag });
      } finally {
        giveBack(part);
      }
    };
    let partNumber = 0;
    try {
      for await (const chunk of body) {
        hash.update(chunk);
        bytes += chunk.length;
        let offset = 0;
        while (offset < chunk.length) {
          const copied = chunk.copy(buffer, filled, offset);
          filled += copied;
          offset += copied;
          if (filled === partSize) {
            while (inFlight.size >= queueSize) await Promise.race(inFlight);
            const sending = send(buffer, filled, ++partNumber);
            inFlight.add(sending);
            sending.finally(() => inFlight.delete(sending)).catch(() => undefined);
            buffer = await take();
            filled = 0;
          }
        }
      }
      const last = buffer;
      buffer = null;
      if (partNumber === 0) {
        try {
          await s3.send(new PutObjectCommand({ Bucket, Key, Body: last.subarray(0, filled), ContentLength: filled }));
        } finally {
          giveBack(last);
        }
      } else {
        if (filled > 0) inFlight.add(send(last, filled, ++partNumber));
        else giveBack(last);
        await Promise.all(inFlight);
        parts.sort((a, b) => a.PartNumber - b.PartNumber);
        await s3.send(
          new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: parts } }),
        );
      }
      return { bytes, sha256: hash.digest('hex') };
    } catch (error) {
      // The buffer being filled goes back too: with a budget, one kept would be one fewer for every upload after.
      if (buffer) giveBack(buffer);
      await Promise.allSettled(inFlight);
      await creating?.catch(() => undefined);
      if (uploadId)
        await s3.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch(() => undefined);
      throw error;
    }
  }

  const server = http.createServer((req, res) => {
    store(decodeURIComponent(req.url.slice(1)), req).then(
      (receipt) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(receipt)),
      (error) =>
        res
          .writeHead(500)
          .end(
            `${error?.name ?? 'Error'} (S3 status ${error?.$metadata?.httpStatusCode ?? 'none'}): ${error?.message ?? error}`,
          ),
    );
  });
  // The benchmark's transfers on the other sides take longer than Node's default 5 s: a connection the front
  // keeps must not be closed under it between two of its uploads.
  server.keepAliveTimeout = 120_000;
  server.requestTimeout = 0;
  server.listen(port + 1, '127.0.0.1', () => process.send('up'));
}

const [role, settings] = process.argv[1] === SELF ? process.argv.slice(2) : [];
if (role) process.once('SIGTERM', () => process.exit(0));
if (role === 'front') await runFront(JSON.parse(settings));
else if (role === 'back') await runBack(JSON.parse(settings));
