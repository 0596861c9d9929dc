import { describe, expect, it, vi } from 'vitest';
import type { ObjectStore } from '@app/common';
import type { UploadPartRow, UploadRepository } from '@app/db';
import type { ObjectStager, UnitOfWork } from '@app/lifecycle';
import { silentLogger } from '../../../../../../test/fakes/platform';
import { blockPart, objectPart, uploadRow } from '../../../../../../test/fakes/upload-rows';
import { BlockStaging } from './block-staging';

const UPLOAD = uploadRow({ storageKey: 'uploads/u1', s3UploadId: 's3-upload-1' });
const staged = { id: 'object_s', principalId: 'alice', storageKey: 'uploads/u1', bytes: 20, sha256: null };

function staging(parts: UploadPartRow[], placements: { block: number; offset: number }[]) {
  const multipart = { storageKey: 'uploads/u1', s3UploadId: 's3-upload-1' };
  const uploads = { listParts: vi.fn().mockResolvedValue(parts), closeMultipart: vi.fn().mockResolvedValue(multipart) };
  const stager = { stageBlocks: vi.fn().mockResolvedValue({ ...staged, placements }), discard: vi.fn() };
  const store = { abortMultipart: vi.fn().mockResolvedValue(undefined) };
  const work = {
    adopt: vi.fn(),
    retain: vi.fn().mockResolvedValue(true),
    uploads: { markStaged: vi.fn(), closeMultipart: vi.fn() },
  };
  const uow = { run: vi.fn((body: (w: typeof work) => Promise<unknown>) => body(work)) };
  const blockStaging = new BlockStaging(
    uow as unknown as UnitOfWork,
    uploads as unknown as UploadRepository,
    stager as unknown as ObjectStager,
    store as unknown as ObjectStore,
    silentLogger,
  );
  return { uploads, stager, store, work, blockStaging };
}

describe('BlockStaging', () => {
  it('stages every block into one object, which each block part then points into', async () => {
    const parts = [blockPart('p2', 4, 10), objectPart('p0', 'small', 3), blockPart('p1', 2, 10)];
    const { stager, work, blockStaging } = staging(parts, [
      { block: 2, offset: 0 },
      { block: 4, offset: 10 },
    ]);
    await blockStaging.stageAll('alice', UPLOAD);
    expect(stager.stageBlocks).toHaveBeenCalledWith('alice', 'uploads/u1', 's3-upload-1', 'all');
    expect(work.adopt).toHaveBeenCalledWith(expect.objectContaining({ id: 'object_s' }));
    expect(work.retain).toHaveBeenCalledTimes(1);
    expect(work.uploads.markStaged).toHaveBeenCalledWith('object_s', [
      { id: 'p1', offset: 0 },
      { id: 'p2', offset: 10 },
    ]);
    expect(work.uploads.closeMultipart).toHaveBeenCalledWith('alice', UPLOAD.id);
  });

  it('without blocks, closes the multipart upload and aborts it in S3', async () => {
    const { uploads, stager, store, blockStaging } = staging([objectPart('p0', 'small', 3)], []);
    await blockStaging.stageAll('alice', UPLOAD);
    expect(uploads.closeMultipart).toHaveBeenCalledWith('alice', UPLOAD.id);
    expect(store.abortMultipart).toHaveBeenCalledWith('uploads/u1', 's3-upload-1');
    expect(stager.stageBlocks).not.toHaveBeenCalled();
  });

  it('refuses with 503, keeping nothing, when S3 no longer has a kept block', async () => {
    const { stager, work, blockStaging } = staging(
      [blockPart('p1', 1, 10), blockPart('p2', 2, 10)],
      [{ block: 1, offset: 0 }],
    );
    await expect(blockStaging.stageAll('alice', UPLOAD)).rejects.toMatchObject({ code: 'service_unavailable' });
    expect(stager.discard).toHaveBeenCalledWith([expect.objectContaining({ id: 'object_s' })]);
    expect(work.adopt).not.toHaveBeenCalled();
  });
});
