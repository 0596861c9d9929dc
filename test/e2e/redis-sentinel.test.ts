import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPort } from '../support/env';
import { RedisSentinelTopology } from '../support/redis-topology';
import {
  askPreviewAndArchive,
  doctorFindings,
  expectDownloadable,
  expectJobsDone,
  expectNothingLeftOver,
  expectQueuesDrained,
  expectRedisUp,
  expectServed,
  newArtifact,
  type Artifact,
  type StoredUpload,
  UploadFlow,
} from '../support/redis-workload';
import { ScratchStack } from '../support/scratch-stack';
import { TopologyProbe } from '../../apps/storage/src/doctor/topology.probe';
import { doctorConfigFor } from '../support/doctor';
import { pollUntil } from '../support/poll';

/**
 * The services on Redis Sentinel (a primary, a replica and three sentinels of the test's own, each side with its
 * own password): a failover while uploads, previews and archives are in flight loses no upload and no job, and
 * the services follow the new primary, and follow it back on a second failover.
 */
const KEY_PREFIX = 'test-sentinel';
/** How long after the sentinels switched the test goes on asking: the demoted primary still runs a while. */
const AFTER_SWITCH_MS = 3_000;
/** A job whose claim a failover lost is taken up again after this (the stack's JOB_LOCK_MS), not the default 30 s. */
const JOB_LOCK_MS = 5_000;

const topology = new RedisSentinelTopology();
// Its own database and bucket, so the doctor can say that nothing in them is left over.
const scratch = new ScratchStack('sentinel', testPort(20380));
const BUCKET = scratch.bucket;
const base = () => scratch.stack.baseUrl;

beforeAll(async () => {
  await topology.start();
  await scratch.start({
    ...topology.stackEnv(),
    REDIS_KEY_PREFIX: KEY_PREFIX,
    // Asks return at once (a preview after its shortest wait): the test asks many while the failover runs.
    ARCHIVE_WAIT_MS: '0',
    PREVIEW_TIMEOUT_MS: '1000',
    PREVIEW_OFFICE_POOL_SIZE: '1',
    REDIS_COMMAND_TIMEOUT_MS: '2000',
    JOB_LOCK_MS: String(JOB_LOCK_MS),
    // A job the old primary acknowledged but never passed on is lost with it: the sweep queues it again after this.
    LOST_JOB_SECONDS: '5',
    // The artifacts are made many at once beside the upload flow; the per-principal limit is not what this tests.
    UHP_MAX_CONCURRENT_UPLOADS: '64',
  });
});

afterAll(async () => {
  await scratch.stop();
  await topology.stop();
});

/**
 * Uploads flowing from four clients, previews and archives asked before, all through, and after a failover; then
 * every upload kept, every job done without being asked twice, the queues on the new primary drained, Redis up
 * again in every service's /healthz, and nothing left over in the bucket or the database.
 */
async function failoverUnderLoad(label: string, counts: { before: number; after: number }) {
  // Made beforehand, so that an ask during the failover is only the ask; more are made if the failover is slow.
  const pool = await Promise.all(
    Array.from({ length: counts.before + counts.after + 12 }, (_, i) => newArtifact(base(), `${label}-${i}`)),
  );
  const asked: Array<{ phase: string; done: Promise<{ item: Artifact; preview: number[]; archive: number[] }> }> = [];
  const ask = (phase: string) => {
    const done = (async () => {
      const item = pool.shift() ?? (await newArtifact(base(), `${label}-${phase}-${asked.length}`));
      return { item, ...(await askPreviewAndArchive(base(), item)) };
    })();
    done.catch(() => undefined); // awaited below; not an unhandled rejection if the test fails before that
    asked.push({ phase, done });
  };

  const knownLeftovers = await doctorFindings(scratch.databaseUrl, BUCKET);
  const flow = new UploadFlow(base(), 4, label);
  let failoverAt = 0;
  let switchedAt: number | undefined;
  let uploadsBefore: number;
  let switched: { from: number; to: number };
  let answers: Array<{ item: Artifact; preview: number[]; archive: number[] }>;
  let uploads: StoredUpload[];
  try {
    for (let i = 0; i < counts.before; i++) ask('before');
    await Promise.all(asked.map(({ done }) => done));
    uploadsBefore = flow.count;
    failoverAt = Date.now();
    const failover = topology.failover();
    let hasFailed = false;
    failover.then(
      () => (switchedAt = Date.now()),
      () => (hasFailed = true),
    );
    while (!hasFailed && (switchedAt === undefined || Date.now() - switchedAt < AFTER_SWITCH_MS)) {
      ask('during');
      await sleep(400);
    }
    switched = await failover;
    for (let i = 0; i < counts.after; i++) ask('after');
    answers = await Promise.all(asked.map(({ done }) => done));
    uploads = await flow.stop();
  } finally {
    await flow.abort();
    await Promise.allSettled(asked.map(({ done }) => done));
  }
  const { from, to } = switched;

  expect(topology.primary().port).toBe(to);
  const during = asked.filter(({ phase }) => phase === 'during').length;
  const overlapping = uploads.filter((upload) => upload.endedAt >= failoverAt && upload.startedAt <= switchedAt!);
  const refused = uploads.filter((upload) => upload.statuses.length > 1);
  const askedAgain = answers.filter(({ preview, archive }) => preview.length > 1 || archive.length > 1);
  console.info(
    `${label}: failover ${from} -> ${to}; ${uploads.length} uploads (${uploads.length - uploadsBefore} from the ` +
      `failover on, ${overlapping.length} across it, ${refused.length} answered 503 first), ${asked.length} ` +
      `previews and archives asked (${during} during it, ${askedAgain.length} answered 503 first)`,
  );
  expect(overlapping.length).toBeGreaterThan(0);
  // Every upload ended kept; whatever it met before was the contract's 503 (uploadUntilStored checks the body).
  for (const upload of uploads) {
    expect(upload.statuses.at(-1)).toBe(200);
    expect(upload.statuses.slice(0, -1).every((status) => status === 503)).toBe(true);
  }
  await expectDownloadable(base(), uploads);

  const items = answers.map(({ item }) => item);
  await expectJobsDone(scratch.sql, items);
  for (const item of items) await expectServed(base(), item);
  await expectQueuesDrained({ ...topology.primary(), password: topology.dataPassword }, KEY_PREFIX, 2 * JOB_LOCK_MS);
  await expectRedisUp(scratch.stack);
  await expectNothingLeftOver(scratch.databaseUrl, BUCKET, knownLeftovers);
}

describe('on Redis Sentinel', () => {
  it('a failover under a flow of uploads, previews and archives: nothing lost, the services follow', async () => {
    await failoverUnderLoad('first', { before: 3, after: 2 });
  });

  it('a second failover, back to the first primary: the services that followed once follow again', async () => {
    await failoverUnderLoad('back', { before: 1, after: 2 });
  });

  it('the doctor reports the sentinels, the primary they agree on and its replica', async () => {
    const probe = new TopologyProbe(
      doctorConfigFor(scratch.databaseUrl, BUCKET, { ...topology.stackEnv(), REDIS_KEY_PREFIX: KEY_PREFIX }),
    );
    // The demoted primary rejoins as a replica a moment after the switch.
    let report = await probe.report();
    await pollUntil(
      async () => (report = await probe.report()).redis?.replicas === 1,
      'the old primary replicating again',
      20_000,
    );
    const primary = topology.primary();
    expect(report.redis).toMatchObject({
      mode: 'sentinel',
      primary: `${primary.host}:${primary.port}`,
      replicas: 1,
      sentinels: 3,
      sentinelsAnswering: 3,
      keyPrefix: KEY_PREFIX,
    });
    expect(report.warnings).toEqual([]);
  });
});
