import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, CLOSE, fileForm, MULTIPART_TYPE, partHead, upload, type ApiResponse } from '../support/api';
import { db, dbNow, scratchDatabase } from '../support/db';
import { KEYS, testPort } from '../support/env';
import { RawExchange, rssOf } from '../support/raw-http';
import { unfinishedUploads } from '../support/s3';
import { pollUntil } from '../support/poll';
import { Stack } from '../support/stack';

/**
 * A tenant that sends bodies without a key, stalls mid-body, stops reading, or holds hundreds of
 * transfers: none of it may reach another tenant, or leave anything behind.
 */
const MiB = 1024 * 1024;
const auth = (who: keyof typeof KEYS) => ({ authorization: `Bearer ${KEYS[who]}` });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function timed(run: () => Promise<ApiResponse>): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  const res = await run();
  return { ms: performance.now() - started, status: res.status };
}

/**
 * Rows and multipart uploads a rejected or cut request must not leave: objects still UPLOADING, or READY
 * without a row.
 */
async function leftovers(since: Date): Promise<{ objects: number; files: number; multipart: string[] }> {
  const { rows } = await db.query(
    `SELECT count(*) AS n FROM stored_objects o WHERE o.created_at >= $1 AND o.status IN ('UPLOADING', 'READY')
        AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_id = o.id)
        AND NOT EXISTS (SELECT 1 FROM container_files c WHERE c.object_id = o.id)`,
    [since],
  );
  const files = await db.query('SELECT count(*) AS n FROM files WHERE created_at >= $1', [since]);
  return { objects: Number(rows[0].n), files: Number(files.rows[0].n), multipart: await unfinishedUploads() };
}

describe('nobody’s body is read before they are known; idle transfers are cut', () => {
  const stack = new Stack(testPort(19080), {
    UHP_IDLE_TIMEOUT_MS: '1500',
    UHP_HEADERS_TIMEOUT_MS: '1500',
    UHP_DRAIN_TIMEOUT_MS: '2000',
    UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(32 * MiB),
  });
  const port = () => stack.port('gateway');
  beforeAll(() => stack.start(['storage', 'gateway']));
  afterAll(() => stack.stop());

  it.each([
    ['POST', '/V1/responses', {}],
    ['POST', '/nope', {}],
    ['PUT', '/v1/files/file_000000000000000000000000', {}],
    ['POST', '/v1/responses', { 'content-type': 'application/json' }],
    ['POST', '/v1/files', { 'content-type': MULTIPART_TYPE }],
  ])('%s %s without a key and a 27 MB body declared: 401 from the headers alone', async (method, path, headers) => {
    const exchange = await RawExchange.open(
      port(),
      RawExchange.head(method, path, { 'content-length': 27_000_000, ...headers }),
    );
    expect(await exchange.status()).toBe(401);
    expect(exchange.text).toMatch(/"code":"invalid_api_key"/);
    exchange.destroy();
  });

  it('an unknown route with a key and a body is 404 before a byte of the body; the rest is drained, then the connection closed', async () => {
    const exchange = await RawExchange.open(
      port(),
      RawExchange.head('POST', '/nope', { 'content-length': 27_000_000, ...auth('alice') }),
    );
    expect(await exchange.status()).toBe(404);
    const chunk = Buffer.alloc(64 * 1024);
    const writer = setInterval(() => exchange.write(chunk), 20);
    try {
      expect(await exchange.closedWithin(10_000)).toBe(true);
    } finally {
      clearInterval(writer);
    }
  });

  it('headers that never end are cut at the headers timeout', async () => {
    const exchange = await RawExchange.open(port(), 'POST /v1/files HTTP/1.1\r\nhost: 127.0.0.1\r\n');
    expect(await exchange.closedWithin(8_000)).toBe(true);
  });

  it('an upload that stops after two bytes is cut at the idle limit and leaves nothing', async () => {
    const since = await dbNow();
    const head = RawExchange.head('POST', '/v1/files', {
      ...auth('alice'),
      'content-type': MULTIPART_TYPE,
      'transfer-encoding': 'chunked',
    });
    const exchange = await RawExchange.open(port(), head);
    const part = partHead('file', 'stalled.bin');
    exchange.write(`${(part.length + 2).toString(16)}\r\n${part}ab\r\n`);
    expect(await exchange.closedWithin(8_000)).toBe(true);
    await pollUntil(
      async () => {
        const left = await leftovers(since);
        return left.objects === 0 && left.files === 0 && left.multipart.length === 0;
      },
      'nothing left of the stalled upload',
      20_000,
    );
  });

  it('a slow upload that keeps moving outlasts the idle limit and is kept whole', async () => {
    const data = randomBytes(12 * 1024);
    const head = RawExchange.head('POST', '/v1/files', {
      ...auth('alice'),
      'content-type': MULTIPART_TYPE,
      'transfer-encoding': 'chunked',
    });
    const exchange = await RawExchange.open(port(), head);
    const chunk = (text: Buffer | string) =>
      exchange.write(
        Buffer.concat([
          Buffer.from(`${Buffer.byteLength(text).toString(16)}\r\n`),
          Buffer.from(text),
          Buffer.from('\r\n'),
        ]),
      );
    chunk(partHead('file', 'slow.bin'));
    for (let i = 0; i < 12; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      chunk(data.subarray(i * 1024, (i + 1) * 1024));
    }
    chunk(CLOSE);
    exchange.write('0\r\n\r\n');
    const status = await exchange.status(10_000);
    expect(status).toBe(200);
    expect(exchange.text).toContain('"bytes":12288');
    exchange.destroy();
  });

  it('a download whose reader stops reading is cut at the idle limit', async () => {
    const file = await upload('big.bin', randomBytes(24 * MiB), { base: `http://127.0.0.1:${port()}` });
    const exchange = await RawExchange.open(
      port(),
      RawExchange.head('GET', `/v1/files/${file.id}/content`, auth('alice')),
      { stallAfterHead: true },
    );
    expect(await exchange.status()).toBe(200);
    // The server gives up on the stalled connection after the idle limit; reading again then shows the
    // end of a body that was cut short.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    exchange.resumeReading();
    expect(await exchange.closedWithin(10_000)).toBe(true);
    expect(exchange.bytesReceived).toBeLessThan(24 * MiB);
    await api('DELETE', `/v1/files/${file.id}`, { base: `http://127.0.0.1:${port()}` });
  });

  it('answers without X-Powered-By; with the storage service gone it stays ready, and neither the 503 nor /healthz names a host, port or error', async () => {
    const base = `http://127.0.0.1:${port()}`;
    const res = await fetch(`${base}/v1/limits`);
    expect(res.headers.get('x-powered-by')).toBeNull();
    stack.kill('storage');
    try {
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(ready.headers.get('x-powered-by')).toBeNull();
      const upload = await api('POST', '/v1/files', { base, form: fileForm('gone.txt', 'storage is gone') });
      expect(upload.status).toBe(503);
      expect(upload.headers.get('retry-after')).toBeTruthy();
      expect(upload.body.toString()).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|\d{4,5}|Error/);
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      const body = await health.text();
      expect(JSON.parse(body).dependencies.storage).toMatchObject({ up: false });
      expect(body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|connect/);
    } finally {
      await stack.start(['storage']);
    }
  });
});

describe('per-principal limits: one tenant at its limits does not slow another', () => {
  const limits = { UHP_MAX_CONCURRENT_DOWNLOADS: '4', UHP_MAX_CONCURRENT_UPLOADS: '2', UHP_IDLE_TIMEOUT_MS: '30000' };
  const stack = new Stack(testPort(19180), { ...limits, UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(16 * MiB) });
  const base = () => `http://127.0.0.1:${stack.port('gateway')}`;
  const held: RawExchange[] = [];
  beforeAll(() => stack.start(['storage', 'gateway']));
  // Even when an assertion fails, the held connections go, so the next test finds Alice's slots free.
  afterEach(() => {
    for (const exchange of held.splice(0)) exchange.destroy();
  });
  afterAll(() => stack.stop());

  it('publishes its limits at /v1/limits', async () => {
    const res = await api('GET', '/v1/limits', { who: 'anon', base: base() });
    expect(res.json.per_principal).toMatchObject({ concurrent_downloads: 4, concurrent_uploads: 2 });
  });

  it('160 stalled downloads and 50 slow uploads of A: A gets 429 past its limits, B answers as on an idle stack', async () => {
    // Larger than what the sockets between gateway and client buffer: a stalled reader keeps its slot.
    const big = await upload('big.bin', randomBytes(15 * MiB), { base: base() });
    const small = await upload('small.txt', 'b'.repeat(1024), { who: 'bob', base: base() });
    const bLatencies = async () => ({
      download: await timed(() => api('GET', `/v1/files/${small.id}/content`, { who: 'bob', base: base() })),
      upload: await timed(() =>
        api('POST', '/v1/files', { who: 'bob', base: base(), form: fileForm('b.txt', 'x'.repeat(1024)) }),
      ),
      ready: await timed(() => api('GET', '/readyz', { who: 'anon', base: base() })),
    });
    const idle: Awaited<ReturnType<typeof bLatencies>>[] = [];
    for (let i = 0; i < 5; i++) idle.push(await bLatencies());

    const downloads = await Promise.all(
      Array.from({ length: 160 }, () =>
        RawExchange.open(stack.port('gateway'), RawExchange.head('GET', `/v1/files/${big.id}/content`, auth('alice')), {
          stallAfterHead: true,
        }),
      ),
    );
    held.push(...downloads);
    const statuses = await Promise.all(downloads.map((exchange) => exchange.status()));
    const uploads = await Promise.all(
      Array.from({ length: 50 }, () =>
        RawExchange.open(
          stack.port('gateway'),
          RawExchange.head('POST', '/v1/files', {
            ...auth('alice'),
            'content-type': MULTIPART_TYPE,
            'transfer-encoding': 'chunked',
          }),
        ),
      ),
    );
    held.push(...uploads);
    const part = partHead('file', 'slow.bin');
    for (const exchange of uploads) exchange.write(`${(part.length + 1).toString(16)}\r\n${part}a\r\n`);
    const uploadStatuses = await Promise.all(uploads.map((exchange) => exchange.status(3_000)));

    expect(statuses.filter((status) => status === 200)).toHaveLength(4);
    expect(statuses.filter((status) => status === 429)).toHaveLength(156);
    expect(downloads.find((exchange) => exchange.text.startsWith('HTTP/1.1 429'))!.text).toMatch(/retry-after: 1/i);
    expect(uploadStatuses.filter((status) => status === 429)).toHaveLength(48);

    const loaded: Awaited<ReturnType<typeof bLatencies>>[] = [];
    for (let i = 0; i < 5; i++) loaded.push(await bLatencies());
    for (const sample of [...idle, ...loaded])
      expect([sample.download.status, sample.upload.status, sample.ready.status]).toEqual([200, 200, 200]);
    const figures = Object.fromEntries(
      (['download', 'upload', 'ready'] as const).map((kind) => [
        kind,
        { idleMs: median(idle.map((s) => s[kind].ms)), loadedMs: median(loaded.map((s) => s[kind].ms)) },
      ]),
    );
    console.info(`B's latencies (median of 5), idle vs. A at its limits: ${JSON.stringify(figures)}`);
  });

  it('the openai SDK waits out a 429 and retries by itself', async () => {
    // Alice's two upload slots, held by uploads that have sent only their first bytes (once the slots
    // the previous test held are free again).
    const holdSlots = async (): Promise<RawExchange[]> => {
      for (let attempt = 0; attempt < 20; attempt++) {
        const slots = await Promise.all(
          [0, 1].map(() =>
            RawExchange.open(
              stack.port('gateway'),
              RawExchange.head('POST', '/v1/files', {
                ...auth('alice'),
                'content-type': MULTIPART_TYPE,
                'transfer-encoding': 'chunked',
              }),
            ),
          ),
        );
        const part = partHead('file', 'holding.bin');
        for (const exchange of slots) exchange.write(`${(part.length + 1).toString(16)}\r\n${part}a\r\n`);
        await new Promise((resolve) => setTimeout(resolve, 300));
        if (slots.every((exchange) => exchange.bytesReceived === 0)) return slots;
        for (const exchange of slots) exchange.destroy();
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      throw new Error('the upload slots never came free');
    };
    const slots = await holdSlots();
    const attempts: number[] = [];
    const client = new OpenAI({
      apiKey: KEYS.alice,
      baseURL: `${base()}/v1`,
      maxRetries: 4,
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        // The SDK also fetches a data: URL of its own to probe for FormData support.
        if (String(url).startsWith('http')) attempts.push(res.status);
        return res;
      },
    });
    // Free one slot a little after the SDK's first try.
    setTimeout(() => slots[0].destroy(), 600);
    const created = await client.files.create({
      file: await toFile(Buffer.from('retried'), 'retried.txt'),
      purpose: 'user_data',
    });
    expect(created.bytes).toBe(7);
    expect(attempts[0]).toBe(429);
    expect(attempts.at(-1)).toBe(200);
    slots[1].destroy();
  });
});

describe('memory bounded by configuration, not by load', () => {
  const budget = 24 * MiB;
  const stack = new Stack(testPort(19380), {
    STORAGE_MEMORY_BUDGET_BYTES: String(budget),
    S3_PART_SIZE_BYTES: String(5 * MiB),
    UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(32 * MiB),
    UHP_MAX_CONCURRENT_UPLOADS: '100',
  });
  beforeAll(() => stack.start(['storage', 'gateway']));
  afterAll(() => stack.stop());

  it('12 concurrent 16 MiB uploads keep the storage service within its budget; nothing is left behind', async () => {
    const since = await dbNow();
    const storagePid = stack.pid('storage');
    const idle = rssOf(storagePid);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(storagePid))), 50);
    const base = `http://127.0.0.1:${stack.port('gateway')}`;
    try {
      const files = await Promise.all(
        Array.from({ length: 12 }, (_, i) => upload(`part-${i}.bin`, randomBytes(16 * MiB), { base })),
      );
      expect(files.every((file) => file.bytes === 16 * MiB)).toBe(true);
      await Promise.all(files.map((file) => api('DELETE', `/v1/files/${file.id}`, { base })));
    } finally {
      clearInterval(sampler);
    }
    console.info(
      `storage RSS: idle ${(idle / MiB).toFixed(0)} MB, peak ${(peak / MiB).toFixed(0)} MB under 12 uploads (budget ${budget / MiB} MiB)`,
    );
    // A part held by the S3 client may exist twice while it is assembled: the ceiling is twice the budget over idle.
    expect(peak - idle).toBeLessThan(2 * budget + 32 * MiB);
    expect((await leftovers(since)).multipart).toEqual([]);
  });
});

describe('keys from UHP_API_KEYS are the environment’s', () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>;
  const carol = 'sk_test_carol_0123456789';
  const dave = 'sk_test_dave_0123456789';
  let stack: Stack;
  beforeAll(async () => {
    database = await scratchDatabase('keys');
    stack = new Stack(testPort(19480), { DATABASE_URL: database.url, UHP_API_KEYS: `carol=${carol},dave=${dave}` });
    await stack.start(['storage', 'gateway']);
  });
  afterAll(async () => {
    await stack?.stop();
    await database?.drop();
  });

  it('a key no longer listed stops working at the next start; a key made with the CLI is untouched; logs show short prefixes', async () => {
    const base = () => `http://127.0.0.1:${stack.port('gateway')}`;
    const as = (key: string) =>
      fetch(`${base()}/v1/files`, { headers: { authorization: `Bearer ${key}` } }).then((res) => res.status);
    expect(await as(dave)).toBe(200);
    const cliKey = 'sk_uhp_cli_key_made_by_an_operator_0123';
    const client = new (await import('pg')).default.Client({ connectionString: database.url });
    await client.connect();
    await client.query(
      `INSERT INTO api_keys (id, principal_id, key_hash, key_prefix, label, source)
       SELECT gen_random_uuid(), id, encode(sha256($1::bytea), 'hex'), 'sk_uhp_c', 'laptop', 'cli' FROM principals WHERE name = 'dave'`,
      [cliKey],
    );
    await client.end();
    expect(await as(cliKey)).toBe(200);

    await stack.restart('gateway', { UHP_API_KEYS: `carol=${carol}` });
    expect(await as(carol)).toBe(200);
    expect(await as(dave)).toBe(401);
    expect(await as(cliKey)).toBe(200);

    // Listed again, it works again; a key an operator revoked would not.
    await stack.restart('gateway', { UHP_API_KEYS: `carol=${carol},dave=${dave}` });
    expect(await as(dave)).toBe(200);

    const log = readFileSync(join(__dirname, '../../.data/test-logs', `gateway-${stack.portBase}.log`), 'utf8');
    const prefixes = [...log.matchAll(/"keyPrefix":"([^"]*)"/g)].map((match) => match[1]);
    expect(prefixes.length).toBeGreaterThan(0);
    for (const prefix of prefixes) expect(prefix.length).toBeLessThanOrEqual(6);
    expect(log).not.toContain(carol);
    expect(log).not.toContain(dave);
  });
});
