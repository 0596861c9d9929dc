import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, CLOSE, MULTIPART_TYPE, partHead } from '../support/api';
import { KEYS, testPort } from '../support/env';
import { RawExchange } from '../support/raw-http';
import { RedisClusterTopology } from '../support/redis-topology';
import {
  askPreviewAndArchive,
  expectDownloadable,
  expectJobsDone,
  expectNothingLeftOver,
  expectQueuesDrained,
  expectRedisUp,
  expectServed,
  newArtifact,
  UploadFlow,
} from '../support/redis-workload';
import { ScratchStack } from '../support/scratch-stack';
import { TopologyProbe } from '../../apps/storage/src/doctor/topology.probe';
import { doctorConfigFor } from '../support/doctor';

/**
 * The services on a Redis Cluster of three primaries: the work goes through, and BullMQ's keys all carry the
 * prefix as a hash tag (`{<REDIS_KEY_PREFIX>}`), so every key of every queue lives on one slot, as BullMQ's
 * multi-key scripts need. The per-principal concurrency limits are the gateway's own and do not touch Redis.
 */
const KEY_PREFIX = 'test-cluster';
const HASH_TAG = `{${KEY_PREFIX}}`;
const CONCURRENT_UPLOADS = 2;

const topology = new RedisClusterTopology();
const scratch = new ScratchStack('cluster', testPort(20480));
const BUCKET = scratch.bucket;
const base = () => scratch.stack.baseUrl;

beforeAll(async () => {
  await topology.start();
  await scratch.start({
    ...topology.stackEnv(),
    REDIS_KEY_PREFIX: KEY_PREFIX,
    ARCHIVE_WAIT_MS: '0',
    PREVIEW_TIMEOUT_MS: '1000',
    PREVIEW_OFFICE_POOL_SIZE: '1',
    UHP_MAX_CONCURRENT_UPLOADS: String(CONCURRENT_UPLOADS),
  });
});

afterAll(async () => {
  await scratch.stop();
  await topology.stop();
});

describe('on Redis Cluster', () => {
  it('uploads, a preview and an archive complete; every queue key is under the hash tag, on one slot', async () => {
    // Made first: its upload would be a third one at once, over the limit this stack is given below.
    const item = await newArtifact(base(), 'cluster-artifact');
    const flow = new UploadFlow(base(), CONCURRENT_UPLOADS, 'cluster');
    try {
      await askPreviewAndArchive(base(), item);
    } finally {
      await flow.abort();
    }
    const uploads = await flow.stop();
    expect(uploads.length).toBeGreaterThan(0);
    expect(uploads.every((upload) => upload.statuses.join() === '200')).toBe(true);
    await expectDownloadable(base(), uploads);
    await expectJobsDone(scratch.sql, [item]);
    await expectServed(base(), item);

    const byNode = await topology.keysByNode();
    const keys = [...byNode.values()].flat();
    // The three queues, their event streams and the worker's scheduler at least.
    for (const queue of ['preview', 'archive', 'purge'])
      expect(keys.some((key) => key.startsWith(`${HASH_TAG}:${queue}:`))).toBe(true);
    expect(keys.filter((key) => !key.startsWith(`${HASH_TAG}:`))).toEqual([]);
    const slots = new Set<number>();
    for (const key of keys) slots.add(await topology.ask(topology.ports[0]!, 'CLUSTER', 'KEYSLOT', key));
    expect([...slots]).toEqual([await topology.ask(topology.ports[0]!, 'CLUSTER', 'KEYSLOT', HASH_TAG)]);
    const holders = [...byNode].filter(([, held]) => held.length > 0).map(([port]) => port);
    expect(holders).toHaveLength(1);

    // The node owning the slot answers every queue command itself, without a redirection.
    await expectQueuesDrained({ host: '127.0.0.1', port: holders[0]!, password: topology.password }, HASH_TAG);
    await expectRedisUp(scratch.stack);
    await expectNothingLeftOver(scratch.databaseUrl, BUCKET);
  });

  it(`the per-principal upload limit still refuses past ${CONCURRENT_UPLOADS} at once, with 429 and Retry-After`, async () => {
    const limits = await api('GET', '/v1/limits', { who: 'anon', base: base() });
    expect(limits.json.per_principal.concurrent_uploads).toBe(CONCURRENT_UPLOADS);
    // Six uploads at once that send their first bytes and hold on: the gateway counts them while they stream.
    const uploads = await Promise.all(
      Array.from({ length: 6 }, () =>
        RawExchange.open(
          scratch.stack.port('gateway'),
          RawExchange.head('POST', '/v1/files', {
            authorization: `Bearer ${KEYS.alice}`,
            'content-type': MULTIPART_TYPE,
            'transfer-encoding': 'chunked',
          }),
        ),
      ),
    );
    const chunk = (data: string | Buffer) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;
    try {
      for (const exchange of uploads) exchange.write(chunk(partHead('file', 'held.bin')));
      // A refused one is answered at once; a held one only when its body ends.
      const early = await Promise.all(uploads.map((exchange) => exchange.status(1_500)));
      expect(early.filter((status) => status === 429)).toHaveLength(uploads.length - CONCURRENT_UPLOADS);
      expect(early.filter((status) => status === null)).toHaveLength(CONCURRENT_UPLOADS);
      const refused = uploads.find((_, i) => early[i] === 429)!;
      expect(refused.text).toMatch(/retry-after: 1/i);
      expect(refused.text).toContain('"code":"rate_limited"');
      // The held ones finish and are kept, so the bucket holds nothing half-done.
      const held = uploads.filter((_, i) => early[i] === null);
      for (const exchange of held)
        exchange.write(`${chunk(randomBytes(1024).toString('hex'))}${chunk(CLOSE)}0\r\n\r\n`);
      expect(await Promise.all(held.map((exchange) => exchange.status(10_000)))).toEqual(
        Array(CONCURRENT_UPLOADS).fill(200),
      );
    } finally {
      for (const exchange of uploads) exchange.destroy();
    }
    await expectNothingLeftOver(scratch.databaseUrl, BUCKET);
  });

  it('the doctor reports the cluster, its state and the hash-tagged key prefix', async () => {
    const report = await new TopologyProbe(
      doctorConfigFor(scratch.databaseUrl, BUCKET, { ...topology.stackEnv(), REDIS_KEY_PREFIX: KEY_PREFIX }),
    ).report();
    expect(report.redis).toMatchObject({
      mode: 'cluster',
      clusterState: 'ok',
      primaries: 3,
      keyPrefix: `{${KEY_PREFIX}}`,
    });
    expect(report.warnings).toEqual([]);
  });
});
