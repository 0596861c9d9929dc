import { describe, expect, it, vi } from 'vitest';
import type { FileRepository, UploadPartRow, UploadRepository, UploadRow } from '@app/db';
import type { UnitOfWork } from '@app/lifecycle';
import type { JobBus } from '@app/queue';
import { silentLogger } from '../../../../../../test/fakes/platform';
import { blockPart, objectPart, uploadRow } from '../../../../../../test/fakes/upload-rows';
import type { BlockStaging } from './block-staging';
import type { CompletedObject } from './completed-object';
import type { ComposedCompletion } from './composed.completion';
import type { JoinBlocksCompletion } from './join-blocks.completion';
import { UploadCompletion } from './upload-completion';
import type { WholeObjectCompletion } from './whole-object.completion';

const object = (sha256: string | null) => ({
  id: 'object_f',
  principalId: 'alice',
  storageKey: 'k',
  bytes: 20,
  sha256,
});

/** UploadCompletion over fakes: the upload claims as `claimed` says, its parts are `parts` (then `staged`). */
function completion(upload: UploadRow, parts: UploadPartRow[], staged: UploadPartRow[] = parts) {
  let listed = 0;
  const uploads = {
    claim: vi.fn().mockResolvedValue({ won: true, upload: { ...upload, status: 'completing' } }),
    unclaim: vi.fn(),
    findForOwner: vi.fn().mockResolvedValue(upload),
    listParts: vi.fn(async () => (listed++ === 0 ? parts : staged)),
  };
  const work = {
    adopt: vi.fn(),
    retain: vi.fn().mockResolvedValue(true),
    release: vi.fn(),
    files: { create: vi.fn(async (_principal: string, file: { id: string }) => ({ id: file.id })) },
    uploads: { markCompleted: vi.fn().mockResolvedValue(true), closeMultipart: vi.fn(), dropParts: vi.fn() },
  };
  const uow = { run: vi.fn((body: (w: typeof work) => Promise<unknown>) => body(work)) };
  const jobs = { hash: vi.fn() };
  const strategies = {
    joinBlocks: { complete: vi.fn<() => Promise<CompletedObject | null>>().mockResolvedValue(null) },
    blockStaging: { stageAll: vi.fn() },
    wholeObject: { complete: vi.fn<() => Promise<CompletedObject | null>>().mockResolvedValue(null) },
    composed: {
      complete: vi.fn<() => Promise<CompletedObject>>().mockResolvedValue({
        object: object('composed-sha256'),
        how: 'composed',
        kept: 'staged',
      }),
    },
  };
  const subject = new UploadCompletion(
    uow as unknown as UnitOfWork,
    uploads as unknown as UploadRepository,
    { findForOwner: vi.fn().mockResolvedValue({ id: 'file_done' }) } as unknown as FileRepository,
    jobs as unknown as JobBus,
    strategies.joinBlocks as unknown as JoinBlocksCompletion,
    strategies.blockStaging as unknown as BlockStaging,
    strategies.wholeObject as unknown as WholeObjectCompletion,
    strategies.composed as unknown as ComposedCompletion,
    silentLogger,
  );
  return { subject, uploads, work, jobs, ...strategies };
}

const MULTIPART = { bytes: 20n, storageKey: 'uploads/u1', s3UploadId: 's3-upload-1' };

describe('UploadCompletion', () => {
  it('keeps the joined blocks as the file, and has the worker measure its SHA-256', async () => {
    const parts = [blockPart('p1', 1, 10), blockPart('p2', 2, 10)];
    const world = completion(uploadRow(MULTIPART), parts);
    world.joinBlocks.complete.mockResolvedValue({ object: object(null), how: 'blocks', kept: 'staged' });
    const view = await world.subject.complete('alice', uploadRow(MULTIPART), { partIds: ['p1', 'p2'], md5: null });
    expect(view.upload).toMatchObject({ status: 'completed', s3UploadId: null, fileId: view.file!.id });
    expect(world.work.adopt).toHaveBeenCalledWith(object(null));
    expect(world.jobs.hash).toHaveBeenCalledWith(['object_f']);
    expect(world.blockStaging.stageAll).not.toHaveBeenCalled();
    expect(world.uploads.unclaim).not.toHaveBeenCalled();
  });

  it('otherwise stages the blocks first, then takes the one whole object the parts became, as it is', async () => {
    const upload = uploadRow(MULTIPART);
    const parts = [blockPart('p2', 2, 10), blockPart('p1', 1, 10)];
    const staged = [objectPart('p2', 'staged', 10, 10), objectPart('p1', 'staged', 10, 0)];
    const world = completion(upload, parts, staged);
    world.wholeObject.complete.mockResolvedValue({ object: object('whole-sha256'), how: 'whole', kept: 'retained' });
    await world.subject.complete('alice', upload, { partIds: ['p2', 'p1'], md5: null });
    expect(world.blockStaging.stageAll).toHaveBeenCalledWith('alice', expect.objectContaining({ id: upload.id }));
    expect(world.wholeObject.complete).toHaveBeenCalledWith(expect.objectContaining({ parts: staged }));
    expect(world.composed.complete).not.toHaveBeenCalled();
    expect(world.work.retain).toHaveBeenCalledWith('alice', 'object_f');
    expect(world.work.adopt).not.toHaveBeenCalled();
    expect(world.jobs.hash).not.toHaveBeenCalled();
  });

  it('composes what is neither, without staging when the upload has no multipart upload (tus)', async () => {
    const upload = uploadRow({ bytes: 20n, protocol: 'tus' });
    const world = completion(upload, [objectPart('p1', 'a', 10), objectPart('p2', 'b', 10), objectPart('p3', 'c', 0)]);
    await world.subject.complete('alice', upload, { partIds: ['p1', 'p2', 'p3'], md5: null });
    expect(world.blockStaging.stageAll).not.toHaveBeenCalled();
    // The empty part names no byte range.
    expect(world.composed.complete).toHaveBeenCalledWith(
      expect.objectContaining({
        parts: [expect.objectContaining({ id: 'p1' }), expect.objectContaining({ id: 'p2' })],
      }),
    );
    expect(world.work.adopt).toHaveBeenCalledWith(object('composed-sha256'));
  });

  it('gives the claim back when the named parts are wrong or a strategy refuses', async () => {
    const upload = uploadRow({ bytes: 20n });
    const short = completion(upload, [objectPart('p1', 'a', 10)]);
    await expect(short.subject.complete('alice', upload, { partIds: ['p1'], md5: null })).rejects.toMatchObject({
      param: 'bytes',
    });
    expect(short.uploads.unclaim).toHaveBeenCalledWith('alice', upload.id);
    const unknown = completion(upload, [objectPart('p1', 'a', 20)]);
    await expect(unknown.subject.complete('alice', upload, { partIds: ['p9'], md5: null })).rejects.toMatchObject({
      param: 'part_ids',
    });
    const refused = completion(upload, [objectPart('p1', 'a', 20)]);
    refused.composed.complete.mockRejectedValue(new Error('md5 mismatch'));
    await expect(refused.subject.complete('alice', upload, { partIds: ['p1'], md5: 'x' })).rejects.toThrow();
    expect(refused.uploads.unclaim).toHaveBeenCalled();
  });

  it('answers a completed upload with its file, and another completion in progress with 409', async () => {
    const done = uploadRow({ status: 'completed', fileId: 'file_done' });
    const world = completion(done, []);
    expect(await world.subject.complete('alice', done, { partIds: [], md5: null })).toEqual({
      upload: done,
      file: { id: 'file_done' },
    });
    expect(world.uploads.claim).not.toHaveBeenCalled();
    const racing = completion(uploadRow(), []);
    racing.uploads.claim.mockResolvedValue({ won: false, upload: uploadRow({ status: 'completing' }) });
    await expect(racing.subject.complete('alice', uploadRow(), { partIds: [], md5: null })).rejects.toMatchObject({
      code: 'upload_conflict',
    });
  });
});
