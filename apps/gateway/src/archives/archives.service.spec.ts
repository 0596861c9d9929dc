import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { JOB } from '@app/contracts';
import { fileUpload, gatewayServices, readDownload } from '../../../../test/fakes/gateway';
import { USER_ORIGIN } from '../auth/task-scope';
import { FAILED_BUILD_COOLDOWN_MS } from './archives.service';

const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';
const never = () => false;

async function world() {
  const services = gatewayServices({ config: { ARCHIVE_WAIT_MS: '300' } });
  const session = await services.sessions.create(ALICE, {});
  const put = (filename: string, data: string) =>
    services.containerFiles.upload(ALICE, session.currentContainerId!, fileUpload(filename, data), USER_ORIGIN);
  return { ...services, sessionId: session.id, put };
}

/** What the worker does with a queued build: the ZIP is staged, the row turns ready in one unit of work. */
async function build(services: Awaited<ReturnType<typeof world>>, zip: string) {
  for (const { archiveId } of services.platform.jobs.jobs(JOB.buildArchive).splice(0)) {
    const staged = await services.platform.stager.stage(ALICE, Readable.from([Buffer.from(zip)]), {
      maxBytes: 1 << 20,
    });
    await services.platform.uow.run(
      async (work) => {
        await work.archives.claimForBuild(ALICE, archiveId);
        const done = await work.archives.completeBuild(ALICE, archiveId, staged.id, {
          filesDone: 1,
          bytesDone: zip.length,
        });
        if (done.outcome === 'ready') {
          await work.adopt(staged);
          await work.release(done.released);
        }
      },
      { staged: [staged] },
    );
  }
  services.platform.jobs.added.length = 0;
}

describe('ArchivesService', () => {
  it('queues one build for the session as it is, answers its progress, then the ZIP', async () => {
    const services = await world();
    await services.put('a.txt', 'aaa');
    const first = await services.archives.archive(ALICE, services.sessionId, never);
    expect(first).toMatchObject({ kind: 'building', archive: { status: 'pending', filesTotal: 1, bytesTotal: 3n } });
    const again = await services.archives.archive(ALICE, services.sessionId, never);
    expect(again.kind).toBe('building');
    expect(new Set(services.platform.jobs.jobs(JOB.buildArchive).map((job) => job.archiveId)).size).toBe(1);
    await build(services, 'PK zip one');
    const ready = await services.archives.archive(ALICE, services.sessionId, never);
    expect(ready.kind).toBe('ready');
    const download = (ready as { download: { filename: string; contentType: string; open(): Promise<Readable> } })
      .download;
    expect(download).toMatchObject({ filename: `${services.sessionId}.zip`, contentType: 'application/zip' });
    expect((await readDownload(download)).toString()).toBe('PK zip one');
    expect(services.platform.jobs.added).toEqual([]);
  });

  it('a ready archive whose ZIP left the store: a 503 with Retry-After, the row and its reference go, the next request builds anew', async () => {
    const services = await world();
    await services.put('a.txt', 'aaa');
    await services.archives.archive(ALICE, services.sessionId, never);
    await build(services, 'PK lost');
    const [row] = services.platform.memory.tables.archives;
    await services.platform.store.delete(services.platform.memory.tables.objects.get(row!.objectId!)!.storageKey);

    const answers = await Promise.all([1, 2].map(() => services.archives.archive(ALICE, services.sessionId, never)));
    for (const answer of answers) {
      expect(answer.kind).toBe('ready');
      await expect(
        readDownload((answer as { download: { open(): Promise<Readable> } }).download),
      ).rejects.toMatchObject({
        code: 'service_unavailable',
        headers: { 'retry-after': '2' },
        message: expect.stringContaining('missing from storage'),
      });
    }
    expect(services.platform.memory.tables.archives).toEqual([]);
    expect(services.platform.jobs.purged).toEqual([row!.objectId]);

    expect(await services.archives.archive(ALICE, services.sessionId, never)).toMatchObject({ kind: 'building' });
    await build(services, 'PK rebuilt');
    const rebuilt = await services.archives.archive(ALICE, services.sessionId, never);
    expect((await readDownload((rebuilt as { download: { open(): Promise<Readable> } }).download)).toString()).toBe(
      'PK rebuilt',
    );
    expect(services.platform.memory.miscounted()).toEqual([]);
  });

  it('a new artifact makes the next request build anew; the older ZIP goes when the new one is ready', async () => {
    const services = await world();
    await services.put('a.txt', 'aaa');
    await services.archives.archive(ALICE, services.sessionId, never);
    await build(services, 'PK old');
    await services.put('b.txt', 'bbb');
    const next = await services.archives.archive(ALICE, services.sessionId, never);
    expect(next).toMatchObject({ kind: 'building', archive: { filesTotal: 2 } });
    await build(services, 'PK new');
    expect(
      (
        await readDownload(
          (
            (await services.archives.archive(ALICE, services.sessionId, never)) as {
              download: { open(): Promise<Readable> };
            }
          ).download,
        )
      ).toString(),
    ).toBe('PK new');
    expect(services.platform.memory.tables.archives).toHaveLength(1);
    expect(services.platform.jobs.purged).toHaveLength(1);
    expect(services.platform.memory.miscounted()).toEqual([]);
  });

  it('a build that failed for good is 503 with Retry-After for a while, then tried again', async () => {
    const services = await world();
    await services.put('a.txt', 'aaa');
    const first = await services.archives.archive(ALICE, services.sessionId, never);
    const id = (first as { archive: { id: string } }).archive.id;
    await services.platform.archives.markFailed(ALICE, id, 'disk on fire');
    await expect(services.archives.archive(ALICE, services.sessionId, never)).rejects.toMatchObject({
      code: 'service_unavailable',
      headers: { 'retry-after': expect.stringMatching(/^\d+$/) },
    });
    services.platform.memory.tables.archives[0].updatedAt = new Date(Date.now() - FAILED_BUILD_COOLDOWN_MS - 1);
    services.platform.jobs.added.length = 0;
    expect((await services.archives.archive(ALICE, services.sessionId, never)).kind).toBe('building');
    expect(services.platform.jobs.jobs(JOB.buildArchive)).toEqual([{ archiveId: id }]);
  });

  it("another principal's session, or a deleted one, is a 404", async () => {
    const services = await world();
    await expect(services.archives.archive(BOB, services.sessionId, never)).rejects.toMatchObject({
      code: 'not_found',
    });
    await services.sessions.delete(ALICE, services.sessionId);
    await expect(services.archives.archive(ALICE, services.sessionId, never)).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(services.platform.jobs.added).toEqual([]);
  });

  it('refuses a new build past the principal’s build limit with 429; a ready or building archive is still answered', async () => {
    const services = gatewayServices({ config: { ARCHIVE_WAIT_MS: '0', UHP_MAX_ARCHIVE_BUILDS: '1' } });
    const first = await services.sessions.create(ALICE, {});
    const second = await services.sessions.create(ALICE, {});
    expect((await services.archives.archive(ALICE, first.id, never)).kind).toBe('building');
    expect((await services.archives.archive(ALICE, first.id, never)).kind).toBe('building');
    await expect(services.archives.archive(ALICE, second.id, never)).rejects.toMatchObject({
      code: 'rate_limited',
      headers: { 'retry-after': '2' },
    });
    const bob = await services.sessions.create(BOB, {});
    expect((await services.archives.archive(BOB, bob.id, never)).kind).toBe('building');
  });
});
