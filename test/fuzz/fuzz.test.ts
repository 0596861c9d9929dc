/**
 * The fuzzer (`npm run fuzz`): seeded, replayable hostile requests across every route, sent as raw bytes
 * by a handful of concurrent clients against the three services as processes. fast-check generates them
 * (a devDependency: arbitraries for Unicode, numbers, JSON and structure that shrink to a minimal case, with
 * a seed that replays a run exactly); each answer is judged by the contract (oracle.ts). At the end: the
 * figures of /v1/limits against what is enforced, the processes still the same ones, their RSS under a
 * bound, and the doctor finding nothing.
 *
 *   FUZZ_SEED=<n> FUZZ_COUNT=<n> FUZZ_SECONDS=<n> npm run fuzz
 *   FUZZ_SEED=<n> FUZZ_COUNT=<n> FUZZ_ONLY=<i,j> npm run fuzz     # replays cases i and j of that run
 */
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runDoctor } from '../../apps/storage/src/cli/doctor';
import { describeFinding } from '../../apps/storage/src/doctor/consistency-checks';
import { api, fileForm } from '../support/api';
import { scratchDatabase } from '../support/db';
import { KEYS, ownQueues, TEST_BUCKET, testPort } from '../support/env';
import { doctorConfigFor } from '../support/doctor';
import { rssOf } from '../support/raw-http';
import { emptyBucket, ensureBucket } from '../support/s3';
import { Stack } from '../support/stack';
import { judge, send } from './support/oracle';
import { requestArbitrary, stackBreaker, type Fixtures, type FuzzRequest } from './support/requests';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const COUNT = Number(process.env.FUZZ_COUNT ?? 1500);
const SECONDS = Number(process.env.FUZZ_SECONDS ?? 600);
const ONLY = process.env.FUZZ_ONLY?.split(',').map(Number);
const CONCURRENCY = 6;
const RSS_BOUND = 600 * 1024 * 1024;
const BUCKET = `${TEST_BUCKET}-fuzz`;
const MAX_FILE = 256 * 1024;
const MAX_INLINE = 64 * 1024;
/**
 * Above the default derived from MAX_INLINE, so that the stack breakers of issue 37 reach the JSON reader
 * instead of a 413. No higher: the raw client asks for `Connection: close`, and Node closes such a
 * connection as soon as an early 413 is written, without the drain; with megabytes still in flight the
 * reset can reach the client before it has read the answer.
 */
const MAX_REQUEST = 1024 * 1024;

let database: { url: string; drop(): Promise<void> };
let stack: Stack;
let fixtures: Fixtures;
const pids = new Map<string, number>();

const call = (method: string, path: string, opts: Parameters<typeof api>[2] = {}) =>
  api(method, path, { ...opts, base: stack.baseUrl });

async function ok<T = any>(promise: Promise<{ status: number; json: any; body: Buffer }>): Promise<T> {
  const res = await promise;
  if (res.status !== 200) throw new Error(`fixture request failed: ${res.status} ${res.body}`);
  return res.json;
}

async function makeFixtures(): Promise<Fixtures> {
  const file = await ok(call('POST', '/v1/files', { form: fileForm('fixture.txt', 'fixture bytes\n', 'text/plain') }));
  const etag = (await call('GET', `/v1/files/${file.id}/content`)).headers.get('etag')!;
  const session = await ok(call('POST', '/v1/sessions', { json: {} }));
  const artifact = await ok(
    call('POST', `/v1/containers/${session.container_id}/files`, {
      form: fileForm('a.txt', 'artifact\n', 'text/plain'),
    }),
  );
  const pdf = await ok(
    call('POST', `/v1/containers/${session.container_id}/files`, {
      form: fileForm('given.pdf', '%PDF-1.4\n%%EOF\n', 'application/pdf'),
    }),
  );
  const bobFile = await ok(call('POST', '/v1/files', { who: 'bob', form: fileForm('bob.txt', 'bob\n') }));
  const bobSession = await ok(call('POST', '/v1/sessions', { who: 'bob', json: {} }));
  const bobArtifact = await ok(
    call('POST', `/v1/containers/${bobSession.container_id}/files`, { who: 'bob', form: fileForm('b.txt', 'b\n') }),
  );
  const victims = { fileIds: [] as string[], sessionIds: [] as string[], containerIds: [] as string[] };
  for (let i = 0; i < 8; i++) {
    victims.fileIds.push((await ok(call('POST', '/v1/files', { form: fileForm(`victim-${i}.txt`, `v${i}`) }))).id);
    const victim = await ok(call('POST', '/v1/sessions', { json: {} }));
    victims.sessionIds.push(victim.id);
    victims.containerIds.push((await ok(call('POST', '/v1/containers', { json: { name: `victim ${i}` } }))).id);
  }
  return {
    aliceKey: KEYS.alice,
    bobKey: KEYS.bob,
    fileId: file.id,
    fileEtag: etag,
    sessionId: session.id,
    containerId: session.container_id,
    containerFileId: artifact.id,
    pdfFileId: pdf.id,
    bobFileId: bobFile.id,
    bobSessionId: bobSession.id,
    bobContainerId: bobSession.container_id,
    bobContainerFileId: bobArtifact.id,
    victims,
  };
}

beforeAll(async () => {
  database = await scratchDatabase('fuzz');
  await ensureBucket(BUCKET);
  await emptyBucket(BUCKET);
  stack = new Stack(testPort(18880), {
    ...ownQueues('fuzz'),
    DATABASE_URL: database.url,
    S3_BUCKET: BUCKET,
    UHP_MAX_FILE_BYTES: String(MAX_FILE),
    UHP_MAX_INLINE_FILE_BYTES: String(MAX_INLINE),
    UHP_MAX_REQUEST_BYTES: String(MAX_REQUEST),
    UHP_IDLE_TIMEOUT_MS: '2000',
    UHP_DRAIN_TIMEOUT_MS: '1000',
    ARCHIVE_WAIT_MS: '1000',
    PREVIEW_TIMEOUT_MS: '3000',
    UHP_MAX_CONCURRENT_UPLOADS: '64',
    LOG_LEVEL: 'warn',
  });
  await stack.start();
  for (const name of ['storage', 'gateway', 'worker'] as const) pids.set(name, stack.pid(name));
  fixtures = await makeFixtures();
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await database?.drop();
});

describe('the fuzzer', () => {
  it(`survives ${COUNT} seeded hostile requests with every answer inside the contract`, async () => {
    const requests = fc.sample(requestArbitrary(fixtures), { seed: SEED, numRuns: COUNT });
    const indices = ONLY ?? requests.map((_, i) => i);
    const failures: { index: number; request: FuzzRequest; status: number | null; problems: string[] }[] = [];
    const kinds = new Map<string, number>();
    const statuses = new Map<string, number>();
    const started = Date.now();
    let next = 0;
    let sent = 0;
    const client = async () => {
      while (next < indices.length && Date.now() - started < SECONDS * 1000) {
        const index = indices[next++];
        const request = requests[index];
        const answer = await send(stack.port('gateway'), request, 15_000);
        sent++;
        const kind = request.kind.replace(/ \(.*/, '');
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
        const status = request.disconnectAfter === undefined ? String(answer.status ?? 'none') : 'hung up';
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        const problems = judge(request, answer);
        if (problems.length > 0) failures.push({ index, request, status: answer.status, problems });
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, client));
    const seconds = (Date.now() - started) / 1000;
    const replay = `FUZZ_SEED=${SEED} FUZZ_COUNT=${COUNT} npm run fuzz`;
    console.log(
      `fuzz: ${sent} requests in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s), seed ${SEED}; ` +
        `replay: ${replay}\nfuzz: by route: ${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}` +
        `\nfuzz: by status: ${[...statuses]
          .sort()
          .map(([s, n]) => `${s} ${n}`)
          .join(', ')}`,
    );
    const shown = failures
      .slice(0, 15)
      .map(
        (f) =>
          `#${f.index} ${f.request.kind}: ${f.request.method} ${f.request.path.slice(0, 120)} → ${f.status}: ` +
          `${f.problems.join('; ')}\n    headers ${JSON.stringify(f.request.headers).slice(0, 300)}\n` +
          `    body ${JSON.stringify(f.request.body.toString('latin1').slice(0, 200))}`,
      );
    expect(
      failures.length,
      `${failures.length} answers outside the contract (replay one: FUZZ_ONLY=${failures[0]?.index} ${replay}):\n${shown.join('\n')}`,
    ).toBe(0);
    // The time bound ends a run early rather than failing it: what was sent was judged.
    if (!ONLY && sent < COUNT)
      console.warn(`fuzz: the time bound (${SECONDS} s) stopped the run at ${sent} of ${COUNT}`);
  }, 900_000);

  it('enforces exactly the limits /v1/limits advertises', async () => {
    const limits = (await call('GET', '/v1/limits')).json;
    expect(limits).toMatchObject({
      object: 'limits',
      max_file_bytes: MAX_FILE,
      max_inline_file_bytes: MAX_INLINE,
      max_request_bytes: MAX_REQUEST,
    });
    expect(limits.max_inline_file_bytes).toBeLessThanOrEqual(limits.max_file_bytes);
    const upload = (bytes: number) => call('POST', '/v1/files', { form: fileForm('edge.bin', randomBytes(bytes)) });
    expect((await upload(limits.max_file_bytes)).status).toBe(200);
    const over = await upload(limits.max_file_bytes + 1);
    expect([over.status, over.json.error.code]).toEqual([413, 'file_too_large']);
    const inline = (bytes: number) =>
      call('POST', '/v1/responses', {
        json: {
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_text', text: 'edge' },
                {
                  type: 'input_file',
                  filename: 'edge.bin',
                  file_data: `data:application/octet-stream;base64,${randomBytes(bytes).toString('base64')}`,
                },
              ],
            },
          ],
        },
      });
    expect((await inline(limits.max_inline_file_bytes)).status).toBe(200);
    const inlineOver = await inline(limits.max_inline_file_bytes + 1);
    expect([inlineOver.status, inlineOver.json.error.code]).toEqual([413, 'file_too_large']);
    const json = (bytes: number) =>
      send(
        stack.port('gateway'),
        {
          kind: 'limit',
          method: 'POST',
          path: '/v1/sessions',
          headers: [
            ['authorization', `Bearer ${KEYS.alice}`],
            ['content-type', 'application/json'],
          ],
          body: Buffer.from(`{"metadata":{"k":"${'x'.repeat(bytes - 21)}"}}`),
        },
        15_000,
      );
    const atLimit = await json(limits.max_request_bytes);
    expect(atLimit.status).not.toBe(413);
    const overLimit = await json(limits.max_request_bytes + 1);
    expect(overLimit.status).toBe(413);
    expect(JSON.parse(overLimit.body.toString()).error.code).toBe('request_too_large');
  });

  it('holds the contract where it broke before: /metrics type, an empty filename', async () => {
    const metrics = await fetch(`${stack.baseUrl}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const boundary = 'emptyNameBoundary';
    const empty = await send(
      stack.port('gateway'),
      {
        kind: 'probe',
        method: 'POST',
        path: '/v1/files',
        headers: [
          ['authorization', `Bearer ${KEYS.alice}`],
          ['content-type', `multipart/form-data; boundary=${boundary}`],
        ],
        body: Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename=""\r\n\r\nx\r\n--${boundary}--\r\n`,
        ),
      },
      15_000,
    );
    expect([empty.status, JSON.parse(empty.body.toString()).error.code]).toEqual([400, 'invalid_filename']);
  });

  it('answers bodies shaped to overflow a stack with a 4xx on every JSON route (issue 37)', async () => {
    // The wide body reaches the route, which refuses it as it would any bad field; the deep one does not.
    const routes: [path: string, field: string][] = [
      [`/v1/uploads/upload_${'0'.repeat(24)}/complete`, 'part_ids'],
      ['/v1/sessions', 'metadata'],
      ['/v1/responses', 'input'],
    ];
    for (const [path, field] of routes)
      for (const [shape, expected] of [
        ['wide', [400, 'invalid_request']],
        ['deep', [400, 'invalid_json']],
      ] as const) {
        const request: FuzzRequest = {
          kind: `stack breaker (${shape})`,
          method: 'POST',
          path,
          headers: [
            ['authorization', `Bearer ${KEYS.alice}`],
            ['content-type', 'application/json'],
          ],
          body: Buffer.from(stackBreaker(shape, field)),
        };
        expect(request.body.length, `${shape} body at ${path}`).toBeLessThan(MAX_REQUEST);
        const answer = await send(stack.port('gateway'), request, 30_000);
        expect(judge(request, answer), `${shape} body at ${path}`).toEqual([]);
        const code = JSON.parse(answer.body.toString()).error?.code;
        expect([answer.status, code], `${shape} body at ${path}`).toEqual(expected);
      }
  }, 120_000);

  it('ends with the same processes, within their memory bound, and nothing for the doctor', async () => {
    console.log(
      `fuzz: RSS at the end: ${[...pids].map(([name, pid]) => `${name} ${(rssOf(pid) / 2 ** 20).toFixed(0)} MiB`).join(', ')}`,
    );
    for (const [name, pid] of pids) {
      expect(stack.pid(name as 'gateway'), `${name} was restarted`).toBe(pid);
      expect(rssOf(pid), `${name} RSS`).toBeLessThan(RSS_BOUND);
      const ready = await fetch(`http://127.0.0.1:${stack.port(name as 'gateway')}/readyz`);
      expect(ready.status, `${name} /readyz`).toBe(200);
    }
    const config = doctorConfigFor(database.url, BUCKET);
    let findings: string[];
    const deadline = Date.now() + 60_000;
    do {
      findings = (await runDoctor(config, { repair: false, json: false })).findings.map(describeFinding);
      if (findings.length === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    } while (Date.now() < deadline);
    expect(findings).toEqual([]);
  }, 120_000);
});
