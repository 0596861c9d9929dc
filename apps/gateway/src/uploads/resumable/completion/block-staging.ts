import { Inject, Injectable } from '@nestjs/common';
import { ApiError, LOGGER, ObjectStore, type AppLogger } from '@app/common';
import { UploadRepository, type UploadRow } from '@app/db';
import { ObjectStager, UnitOfWork } from '@app/lifecycle';

/**
 * Before a completion that cannot join blocks as they are: the upload's multipart upload completes with
 * every part it holds into one staged object, and each block part then points into it (one reference
 * each), so the named parts are byte ranges of stored objects like any small part.
 */
@Injectable()
export class BlockStaging {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Stages every block of `upload` (one with an open multipart upload); without blocks, just closes it. */
  async stageAll(principalId: string, upload: UploadRow): Promise<void> {
    const blockParts = (await this.uploads.listParts(principalId, upload.id))
      .filter((part) => part.block !== null)
      .sort((a, b) => a.block! - b.block!);
    if (blockParts.length === 0) {
      const open = await this.uploads.closeMultipart(principalId, upload.id);
      if (open) await this.store.abortMultipart(open.storageKey, open.s3UploadId).catch(() => undefined);
      return;
    }
    const staged = await this.stager.stageBlocks(principalId, upload.storageKey!, upload.s3UploadId!, 'all');
    const offsets = new Map(staged.placements.map((placed) => [placed.block, placed.offset]));
    const lost = blockParts.find((part) => !offsets.has(part.block!));
    if (lost) {
      await this.stager.discard([staged]);
      this.logger.error({ uploadId: upload.id, block: lost.block }, 'a kept block is missing from S3');
      throw new ApiError('service_unavailable', 'Object storage lost a part of this upload.');
    }
    await this.uow.run(
      async (work) => {
        await work.adopt(staged);
        for (let i = 1; i < blockParts.length; i++) await work.retain(principalId, staged.id);
        await work.uploads.markStaged(
          staged.id,
          blockParts.map((part) => ({ id: part.id, offset: offsets.get(part.block!)! })),
        );
        await work.uploads.closeMultipart(principalId, upload.id);
      },
      { staged: [staged] },
    );
    this.logger.info({ uploadId: upload.id, blocks: blockParts.length, bytes: staged.bytes }, 'upload blocks staged');
  }
}
