import { describe, expect, it } from 'vitest';
import { fileUpload, gatewayServices, readDownload } from '../../../../test/fakes/gateway';
import { runPurges } from '../../../../test/fakes/platform';
import { USER_ORIGIN } from '../auth/task-scope';
import type { ContainerFileListing } from '@app/db';
import type { SessionListing } from './sessions.service';

const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';

/** Every batch of a whole listing, pulled until the end. */
async function collectBatches(listing: SessionListing): Promise<ContainerFileListing[][]> {
  if (listing.kind !== 'all') throw new Error(`expected the whole listing, got ${listing.kind}`);
  const out: ContainerFileListing[][] = [];
  for (let batch = await listing.batches.next(); batch; batch = await listing.batches.next()) out.push(batch);
  return out;
}

describe('SessionsService', () => {
  it('deleting a session takes its containers and artifacts at once; bytes an uploaded file shares survive', async () => {
    const world = gatewayServices();
    const session = await world.sessions.create(ALICE, { project: 'q3' });
    const containerId = session.currentContainerId!;
    const file = await world.files.upload(ALICE, fileUpload('shared.txt', 'shared'));
    await world.containerFiles.copy(ALICE, containerId, { file_id: file.id }, USER_ORIGIN);
    await world.containerFiles.upload(ALICE, containerId, fileUpload('own.txt', 'own'), USER_ORIGIN);
    await world.sessions.delete(ALICE, session.id);
    await expect(world.sessions.get(ALICE, session.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.containers.get(ALICE, containerId)).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.sessions.delete(ALICE, session.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await runPurges(world.platform)).toBe(1);
    expect((await readDownload(await world.files.download(ALICE, file.id))).toString()).toBe('shared');
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it("another principal's session is a 404 for every operation", async () => {
    const world = gatewayServices();
    const session = await world.sessions.create(ALICE, {});
    await expect(world.sessions.get(BOB, session.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.sessions.delete(BOB, session.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.sessions.listing(BOB, session.id, {})).rejects.toMatchObject({ code: 'not_found' });
    expect((await world.sessions.list(BOB, { limit: 10, order: 'desc' })).items).toEqual([]);
  });

  it('lists only the artifacts of live containers: whole as a stream, or page by page', async () => {
    const world = gatewayServices();
    const session = await world.sessions.create(ALICE, {});
    const first = session.currentContainerId!;
    for (let i = 0; i < 3; i++)
      await world.containerFiles.upload(ALICE, first, fileUpload(`a${i}.txt`, `${i}`), USER_ORIGIN);
    await world.containers.delete(ALICE, first);
    const second = (await world.sessions.get(ALICE, session.id)).currentContainerId!;
    await world.containerFiles.upload(ALICE, second, fileUpload('late.txt', 'late'), USER_ORIGIN);
    const all = await world.sessions.listing(ALICE, session.id, {});
    expect(all.kind).toBe('all');
    const listed = await collectBatches(all).then((batches) => batches.flat());
    expect(listed.map((item) => item.filename)).toEqual(['late.txt']);
    const page = await world.sessions.listing(ALICE, session.id, { limit: 1 });
    expect(page).toMatchObject({ kind: 'page', page: { hasMore: false } });
    await expect(
      world.sessions.listing(ALICE, session.id, { after: 'file_000000000000000000000000' }),
    ).rejects.toMatchObject({ param: 'after' });
  });

  it('streams more artifacts than one batch holds, in order, reading batch by batch', async () => {
    const world = gatewayServices();
    const session = await world.sessions.create(ALICE, {});
    const seed = await world.containerFiles.upload(
      ALICE,
      session.currentContainerId!,
      fileUpload('f0.txt', 'x'),
      USER_ORIGIN,
    );
    // Rows straight into the table: the point is the paging of the listing, not 1,050 uploads.
    for (let i = 1; i < 1_050; i++) {
      await world.platform.containerFiles.create(ALICE, {
        ...seed,
        id: `file_${String(i).padStart(24, '0')}`,
        filename: `f${i}.txt`,
        createdAt: new Date(),
      });
    }
    const all = await world.sessions.listing(ALICE, session.id, {});
    const batches = await collectBatches(all);
    expect(batches.map((batch) => batch.length)).toEqual([500, 500, 50]);
    const listed = batches.flat();
    expect(listed).toHaveLength(1_050);
    expect(listed[0].filename).toBe('f0.txt');
    expect(listed.at(-1)!.filename).toBe('f1049.txt');
    const pageTwo = await world.sessions.listing(ALICE, session.id, {
      limit: 1000,
      after: listed[999].id,
    });
    expect(pageTwo).toMatchObject({ kind: 'page', page: { hasMore: false } });
    expect((pageTwo as { page: { items: unknown[] } }).page.items).toHaveLength(50);
  });
});
