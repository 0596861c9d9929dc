// One outbound connection of ours, in a process of its own (NODE_EXTRA_CA_CERTS is read at start), made by the
// built code (dist/, `npm run build`) as the services make it: the client built from the config schema, from
// the environment. Prints one JSON line: what worked, and the error (code, message) of what did not.
//
//   node tls-probe.cjs prisma   DATABASE_URL              the Prisma client of the gateway and the worker
//   node tls-probe.cjs redis    REDIS_URL                 a BullMQ queue on the queue module's connection
//   node tls-probe.cjs s3       S3_ENDPOINT, S3_BUCKET…   the storage service's S3 client, a presigned read, a
//                                                         GET through HttpClient (undici) and one through Node's
//                                                         global fetch (the gateway's agent client)
'use strict';
require('reflect-metadata');
const { randomUUID } = require('node:crypto');
const { join } = require('node:path');
const { Readable } = require('node:stream');

const DIST = join(__dirname, '../../../../dist');
const built = (path) => require(join(DIST, path));

const failureOf = (error) => {
  // Prisma wraps the driver's error; the TLS failure is in its cause (or its message).
  const root = error?.cause?.cause ?? error?.cause ?? error;
  return { code: root?.code ?? error?.code, message: String(error?.message ?? error) };
};

/** Runs `step`; records `{ ok: true, ...result }` or `{ ok: false, code, message }` under `name`. */
async function attempt(report, name, step) {
  try {
    report[name] = { ok: true, ...(await step()) };
    return true;
  } catch (error) {
    report[name] = { ok: false, ...failureOf(error) };
    return false;
  }
}

async function prisma() {
  const { gatewayConfigSchema, loadConfig } = built('libs/common/src/index.js');
  const { prismaProvider } = built('libs/db/src/prisma.providers.js');
  const client = prismaProvider.useFactory(loadConfig(gatewayConfigSchema));
  const report = {};
  try {
    await attempt(report, 'query', async () => {
      await client.ping();
      const [row] = await client.$queryRawUnsafe('SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      return { ssl: row.ssl, version: row.version };
    });
  } finally {
    await client.$disconnect().catch(() => undefined);
  }
  return report;
}

async function redis() {
  const { loadConfig, redisConnectionPlanOf, redisKeyPrefixOf, workerConfigSchema } = built('libs/common/src/index.js');
  const { Queue } = require('bullmq');
  const config = loadConfig(workerConfigSchema);
  // The options every queue connection of a worker is made with (libs/queue's RedisConnection).
  const queue = new Queue(`tls-probe-${randomUUID()}`, {
    prefix: redisKeyPrefixOf(config),
    connection: redisConnectionPlanOf(config, { failFast: false }).options,
  });
  const report = {};
  // The worker's connection retries forever: its first error is the answer.
  const refused = new Promise((_, fail) => queue.once('error', fail));
  refused.catch(() => undefined);
  await attempt(report, 'queue', () =>
    Promise.race([
      refused,
      (async () => {
        const job = await queue.add('probe', { at: Date.now() });
        const waiting = await queue.getWaitingCount();
        const stream = (await queue.getBackend().client).stream;
        await queue.obliterate({ force: true });
        return { jobId: job.id, waiting, encrypted: stream.encrypted === true, authorized: stream.authorized };
      })(),
    ]),
  );
  await queue.close().catch(() => undefined);
  return report;
}

async function s3() {
  const { loadConfig, PresignedUrlReader, storageConfigSchema } = built('libs/common/src/index.js');
  const { S3ObjectClient } = built('apps/storage/src/objects/s3-object.client.js');
  const { HttpClient, readText } = built('libs/common/src/http/http.client.js');
  const config = loadConfig(storageConfigSchema);
  const noMultipart = {
    opened: () => Promise.reject(new Error('a probe object is one PUT, never a multipart upload')),
    partStored: () => Promise.resolve(),
    closed: () => Promise.resolve(),
  };
  const client = new S3ObjectClient(config, noMultipart);
  const report = {};
  const key = `tls-probe/${randomUUID()}`;
  const body = `tls probe ${key}`;
  const stored = await attempt(report, 'sdk', async () => {
    await client.ping();
    await client.upload(key, Readable.from([Buffer.from(body)]), 1024 * 1024, 'text/plain');
    return { size: await client.size(key) };
  });
  // Signing is local: the URL exists either way, and its read is what must be trusted or refused.
  const url = await client.readUrl(stored ? key : 'tls-probe/absent', 60);
  const failures = [];
  const reader = new PresignedUrlReader({ idleTimeoutMs: 10_000, onFailure: (failure) => failures.push(failure) });
  const presigned = await attempt(report, 'presignedRead', async () => {
    const read = await reader.read(url);
    return { status: read.status, text: (await readText(read.body)).text };
  });
  if (!presigned) report.presignedRead.code = failures[0]?.code;
  const http = new HttpClient({ connectMs: 10_000, headersMs: 10_000, idleMs: 10_000 });
  await attempt(report, 'httpGet', async () => {
    const answer = await http.send({ method: 'GET', url: new URL(config.S3_ENDPOINT), idempotent: true });
    await readText(answer.body);
    return { status: answer.statusCode };
  });
  await attempt(report, 'fetchGet', async () => {
    const answer = await fetch(config.S3_ENDPOINT, { signal: AbortSignal.timeout(10_000) });
    await answer.arrayBuffer();
    return { status: answer.status };
  });
  if (stored) await client.delete(key);
  reader.close();
  http.close();
  client.destroy();
  return report;
}

const probes = { prisma, redis, s3 };
const probe = probes[process.argv[2]];
if (!probe) {
  process.stderr.write(`usage: tls-probe.cjs ${Object.keys(probes).join('|')}\n`);
  process.exit(2);
}
probe().then(
  (report) => {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    process.exit(0);
  },
  (error) => {
    process.stderr.write(`${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
