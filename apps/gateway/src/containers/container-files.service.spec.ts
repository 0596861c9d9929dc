import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { fileUpload, gatewayServices, readDownload } from '../../../../test/fakes/gateway';
import { runPurges } from '../../../../test/fakes/platform';
import { USER_ORIGIN } from '../auth/task-scope';

const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';

async function sessionOf(world: ReturnType<typeof gatewayServices>, principalId = ALICE) {
  const session = await world.sessions.create(principalId, {});
  return { sessionId: session.id, containerId: session.currentContainerId! };
}

describe('ContainerFilesService and ContainersService', () => {
  it('copies an uploaded file in without a second copy of the bytes; the copy outlives the original', async () => {
    const world = gatewayServices();
    const { containerId } = await sessionOf(world);
    const file = await world.files.upload(ALICE, fileUpload('input.csv', 'a,b\n1,2\n'));
    const copy = await world.containerFiles.copy(ALICE, containerId, { file_id: file.id }, USER_ORIGIN);
    expect(copy).toMatchObject({ filename: 'input.csv', objectId: file.objectId, source: 'user' });
    expect(copy.id).not.toBe(file.id);
    expect(world.platform.store.objects.size).toBe(1);
    await world.files.delete(ALICE, file.id);
    expect(await runPurges(world.platform)).toBe(0);
    expect((await readDownload(await world.containerFiles.download(ALICE, containerId, copy.id))).toString()).toBe(
      'a,b\n1,2\n',
    );
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it("refuses a copy of another principal's file, or into another principal's container, with 404", async () => {
    const world = gatewayServices();
    const mine = await sessionOf(world, ALICE);
    const theirs = await sessionOf(world, BOB);
    const file = await world.files.upload(ALICE, fileUpload('a.txt', 'a'));
    await expect(
      world.containerFiles.copy(BOB, theirs.containerId, { file_id: file.id }, USER_ORIGIN),
    ).rejects.toMatchObject({ code: 'not_found', param: 'file_id' });
    await expect(
      world.containerFiles.copy(BOB, mine.containerId, { file_id: file.id }, USER_ORIGIN),
    ).rejects.toMatchObject({ code: 'not_found' });
    await expect(world.containerFiles.copy(ALICE, mine.containerId, { file_id: 7 }, USER_ORIGIN)).rejects.toMatchObject(
      { param: 'file_id' },
    );
    expect(world.platform.memory.tables.containerFiles).toEqual([]);
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it('an upload whose container was deleted while its bytes streamed keeps nothing', async () => {
    const world = gatewayServices();
    const { containerId } = await sessionOf(world);
    const upload = world.containerFiles.upload(ALICE, containerId, fileUpload('late.txt', 'late'), USER_ORIGIN);
    await world.containers.delete(ALICE, containerId);
    await expect(upload).rejects.toMatchObject({ code: 'not_found' });
    expect(world.platform.store.objects.size).toBe(0);
    expect(world.platform.memory.tables.containerFiles).toEqual([]);
  });

  it('an artifact an agent writes in process stops where one request does, below UHP_MAX_FILE_BYTES too', async () => {
    const write = (world: ReturnType<typeof gatewayServices>, containerId: string, bytes: number) =>
      world.artifacts.write(ALICE, containerId, USER_ORIGIN, {
        filename: 'report.bin',
        contentType: 'application/octet-stream',
        body: Readable.from([Buffer.alloc(bytes)]),
      });
    for (const [config, limit] of [
      [{ UHP_MAX_FILE_BYTES: '4096', UHP_MAX_SINGLE_REQUEST_FILE_BYTES: '1000' }, 1000],
      [{ UHP_MAX_FILE_BYTES: '1000', UHP_MAX_SINGLE_REQUEST_FILE_BYTES: '4096' }, 1000],
    ] as const) {
      const world = gatewayServices({ config });
      const { containerId } = await sessionOf(world);
      expect(await write(world, containerId, limit)).toMatchObject({ bytes: BigInt(limit) });
      await expect(write(world, containerId, limit + 1)).rejects.toMatchObject({ code: 'file_too_large' });
      expect(world.platform.memory.tables.containerFiles).toHaveLength(1);
      expect(world.platform.store.objects.size).toBe(1);
    }
  });

  it('deleting an artifact drops the archives that hold its bytes, and answers 404 the second time', async () => {
    const world = gatewayServices();
    const { sessionId, containerId } = await sessionOf(world);
    const artifact = await world.containerFiles.upload(
      ALICE,
      containerId,
      fileUpload('chart.png', 'png bytes'),
      USER_ORIGIN,
    );
    const archive = await world.platform.archives.requestBuild(ALICE, sessionId, {
      hash: 'h'.repeat(64),
      filesTotal: 1,
      bytesTotal: 9n,
    });
    const zip = await world.platform.stager.stage(ALICE, Readable.from([Buffer.from('zip')]), { maxBytes: 100 });
    await world.platform.uow.run(async (work) => {
      await work.archives.claimForBuild(ALICE, archive!.id);
      await work.archives.completeBuild(ALICE, archive!.id, zip.id, { filesDone: 1, bytesDone: 9 });
      await work.adopt(zip);
    });
    await world.containerFiles.delete(ALICE, containerId, artifact.id);
    expect(world.platform.memory.tables.archives).toEqual([]);
    await expect(world.containerFiles.delete(ALICE, containerId, artifact.id)).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await runPurges(world.platform)).toBe(2);
    expect(world.platform.store.objects.size).toBe(0);
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it("deleting a session's current container gives the session a fresh empty one; its files are gone", async () => {
    const world = gatewayServices();
    const { sessionId, containerId } = await sessionOf(world);
    const artifact = await world.containerFiles.upload(ALICE, containerId, fileUpload('a.txt', 'a'), USER_ORIGIN);
    await world.containers.delete(ALICE, containerId);
    const session = await world.sessions.get(ALICE, sessionId);
    expect(session.currentContainerId).not.toBe(containerId);
    expect((await world.containers.get(ALICE, session.currentContainerId!)).sessionId).toBe(sessionId);
    await expect(world.containerFiles.get(ALICE, containerId, artifact.id)).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(world.containers.delete(ALICE, containerId)).rejects.toMatchObject({ code: 'not_found' });
    expect(await runPurges(world.platform)).toBe(1);
    expect(world.platform.memory.miscounted()).toEqual([]);
  });

  it('POST /v1/containers opens a session whose container holds the named files', async () => {
    const world = gatewayServices();
    const file = await world.files.upload(ALICE, fileUpload('seed.txt', 'seed'));
    const container = await world.containers.create(ALICE, { name: 'analysis', file_ids: [file.id] });
    expect(container.name).toBe('analysis');
    expect(
      (await world.containerFiles.list(ALICE, container.id, { limit: 10, order: 'asc' })).items.map(
        (item) => item.filename,
      ),
    ).toEqual(['seed.txt']);
    await expect(world.containers.create(ALICE, { file_ids: ['file_000000000000000000000000'] })).rejects.toMatchObject(
      { param: 'file_ids[0]' },
    );
    expect(world.platform.memory.tables.sessions).toHaveLength(1);
  });
});
