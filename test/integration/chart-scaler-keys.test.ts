import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@app/common';
import { JobBus } from '@app/queue';
import { JOB, QUEUE, type QueueName } from '@app/contracts';
import { render, type K8sObject } from '../chart/support/helm';
import { TEST_REDIS_URL } from '../support/env';
import { pollUntil } from '../support/poll';

/**
 * The chart's KEDA scalers against real BullMQ: jobs enqueued through the job bus (plain and prioritized)
 * and taken by a worker (active), under a prefix of this test, in the test Redis. Each pool's ScaledObject,
 * rendered for that Redis and prefix, names keys that exist with the types KEDA's redis scaler counts
 * (list, sorted set), and what they count adds up to BullMQ's own wait + prioritized + active.
 */
interface ScaledObject extends K8sObject {
  spec: { scaleTargetRef: { name: string }; triggers: Array<{ name: string; metadata: Record<string, string> }> };
}

const PREFIX = `chart-keys-${randomUUID().slice(0, 8)}`;
const redisUrl = new URL(TEST_REDIS_URL);
const connection = { url: TEST_REDIS_URL };
const queues = {
  purge: new Queue(QUEUE.purge, { prefix: PREFIX, connection }),
  preview: new Queue(QUEUE.preview, { prefix: PREFIX, connection }),
  archive: new Queue(QUEUE.archive, { prefix: PREFIX, connection }),
} satisfies Record<QueueName, Queue>;
const redis = new Redis(TEST_REDIS_URL);
let worker: Worker | undefined;
let release: () => void = () => undefined;
let scaledObjects: ScaledObject[] = [];

beforeAll(async () => {
  const objects = await render({
    values: 'production',
    overrides: {
      redis: {
        host: redisUrl.hostname,
        port: Number(redisUrl.port || 6379),
        db: Number(redisUrl.pathname.slice(1) || 0),
        auth: false,
        keyPrefix: PREFIX,
      },
      workers: {
        pools: ['preview', 'archive', 'purge'].map((name) => ({
          name,
          queues: [name],
          replicas: 1,
          concurrency: 2,
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } },
          tmpSizeLimit: '64Mi',
          shutdownGraceMs: 25000,
          env: {},
          egress: false,
          keda: {
            enabled: true,
            minReplicas: 1,
            maxReplicas: 5,
            jobsPerReplica: 2,
            pollingInterval: 15,
            cooldownPeriod: 60,
          },
          hpa: { enabled: false, minReplicas: 1, maxReplicas: 5, targetCPUUtilizationPercentage: 70 },
        })),
      },
    },
  });
  scaledObjects = objects.filter((object): object is ScaledObject => object.kind === 'ScaledObject');

  const bus = new JobBus(queues.purge, queues.preview, queues.archive, createLogger('test', 'silent'));
  const preview = (n: number) => Array.from({ length: n }, () => ({ previewId: randomUUID(), generation: 0 }));
  await bus.add(JOB.convertPreview, preview(3));
  await bus.add(JOB.convertPreview, preview(4), { priority: 2 });
  await bus.add(JOB.buildArchive, [{ archiveId: randomUUID() }, { archiveId: randomUUID() }], { priority: 1 });
  await bus.purge(Array.from({ length: 5 }, () => randomUUID()));

  // Two preview jobs held active by a worker until the test is done.
  const held = new Promise<void>((resolve) => (release = resolve));
  worker = new Worker(QUEUE.preview, () => held, { prefix: PREFIX, connection, concurrency: 2 });
  await pollUntil(async () => (await queues.preview.getActiveCount()) === 2, 'two preview jobs active', 10_000);
});

afterAll(async () => {
  release();
  await worker?.close(true);
  for (const queue of Object.values(queues)) {
    await queue.obliterate({ force: true });
    await queue.close();
  }
  redis.disconnect();
});

/** What KEDA's redis scaler reads for one key: its length by type (0 when absent). */
async function kedaLength(key: string): Promise<{ type: string; length: number }> {
  const type = await redis.type(key);
  const length =
    type === 'list'
      ? await redis.llen(key)
      : type === 'zset'
        ? await redis.zcard(key)
        : type === 'set'
          ? await redis.scard(key)
          : type === 'hash'
            ? await redis.hlen(key)
            : 0;
  return { type, length };
}

describe('the rendered KEDA scalers against BullMQ', () => {
  it('render one ScaledObject per pool, for this Redis and prefix', () => {
    expect(scaledObjects.map((object) => object.spec.scaleTargetRef.name).sort()).toEqual([
      'uhp-uhp-files-worker-archive',
      'uhp-uhp-files-worker-preview',
      'uhp-uhp-files-worker-purge',
    ]);
  });

  it.each(['preview', 'archive', 'purge'] as const)(
    '%s: the keys exist with the types KEDA counts, and add up to BullMQ’s counts',
    async (queue) => {
      const scaled = scaledObjects.find((object) => object.spec.scaleTargetRef.name.endsWith(`-worker-${queue}`))!;
      let total = 0;
      const types: Record<string, string> = {};
      for (const trigger of scaled.spec.triggers) {
        expect(trigger.metadata.address).toBe(`${redisUrl.hostname}:${redisUrl.port || 6379}`);
        const { type, length } = await kedaLength(trigger.metadata.listName!);
        types[trigger.metadata.listName!] = type;
        total += length;
      }
      const counts = await queues[queue].getJobCounts('wait', 'prioritized', 'active');
      const expected = (counts.wait ?? 0) + (counts.prioritized ?? 0) + (counts.active ?? 0);
      expect(total).toBe(expected);
      expect(total).toBe({ preview: 7, archive: 2, purge: 5 }[queue]);
      // Every non-empty state has the type the scaler expects of it.
      for (const [key, type] of Object.entries(types)) {
        if (type === 'none') continue;
        expect(type, key).toBe(key.endsWith(':prioritized') ? 'zset' : 'list');
      }
    },
  );

  it('see the states that hold jobs here: plain jobs wait in a list, prioritized ones in a sorted set, taken ones in active', async () => {
    const scaled = scaledObjects.find((object) => object.spec.scaleTargetRef.name.endsWith('-worker-preview'))!;
    const lengths = Object.fromEntries(
      await Promise.all(
        scaled.spec.triggers.map(async (t) => [t.name, (await kedaLength(t.metadata.listName!)).length] as const),
      ),
    );
    expect(lengths.preview_active).toBe(2);
    expect(lengths.preview_wait! + lengths.preview_prioritized!).toBe(5);
    expect(lengths.preview_prioritized).toBeGreaterThan(0);
    expect((await kedaLength(`${PREFIX}:purge:wait`)).length).toBe(5);
    expect((await kedaLength(`${PREFIX}:archive:prioritized`)).type).toBe('zset');
  });
});
