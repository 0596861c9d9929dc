import { Inject, Injectable } from '@nestjs/common';
import { ApiError, LOGGER, type AppLogger } from '@app/common';
import { JobBus } from '@app/queue';
import { newId } from '@app/contracts';
import { FileRepository, UploadRepository, type FileRow, type UploadPartRow, type UploadRow } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import { type UploadView, uploadConflict } from '../upload-status';
import { BlockStaging } from './block-staging';
import type { CompletedObject, CompletionRequest } from './completed-object';
import { ComposedCompletion } from './composed.completion';
import { JoinBlocksCompletion } from './join-blocks.completion';
import { WholeObjectCompletion } from './whole-object.completion';

/**
 * How long one completion holds an upload: composing and hashing take time in proportion to the upload's size,
 * and this leaves room for the largest; past it a claim whose gateway died lapses, and another completion may
 * take the upload.
 */
const COMPLETION_CLAIM_MS = 15 * 60_000;

/** The parts that make the file, in order, and the MD5 to check it against (null for none). */
export interface UploadCompletionInput {
  partIds: string[];
  md5: string | null;
}

/**
 * Turns a pending upload into its file, for the Uploads API's `complete` and for tus once the offset
 * reaches the length. The upload is claimed in Postgres (one completion at a time across gateways, so
 * racing completions cannot both win); the named parts are checked against `bytes`; the file's object
 * is made by the first strategy that applies (blocks joined as they are; else, blocks staged first, one
 * whole object as it is; else the byte ranges composed); the file is kept. Any failed check gives the
 * claim back: the upload stays pending for a corrected retry. Completing a completed upload returns its file.
 */
@Injectable()
export class UploadCompletion {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(JobBus) private readonly jobs: JobBus,
    @Inject(JoinBlocksCompletion) private readonly joinBlocks: JoinBlocksCompletion,
    @Inject(BlockStaging) private readonly blockStaging: BlockStaging,
    @Inject(WholeObjectCompletion) private readonly wholeObject: WholeObjectCompletion,
    @Inject(ComposedCompletion) private readonly composed: ComposedCompletion,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Completes `current`, an upload the caller found under its own protocol. */
  async complete(principalId: string, current: UploadRow, input: UploadCompletionInput): Promise<UploadView> {
    const viewNow = async () => {
      const upload = (await this.uploads.findForOwner(principalId, current.id)) ?? current;
      return { upload, file: upload.fileId ? await this.files.findForOwner(principalId, upload.fileId) : null };
    };
    if (current.status === 'completed') return viewNow();
    const claim = await this.uploads.claim(principalId, current.id, new Date(Date.now() + COMPLETION_CLAIM_MS));
    if (!claim.won) {
      if (!claim.upload) throw ApiError.notFound('upload');
      if (claim.upload.status === 'completed') return viewNow();
      throw uploadConflict(claim.upload.status === 'pending' ? { ...claim.upload, status: 'expired' } : claim.upload);
    }
    const upload = claim.upload;
    let completed = false;
    try {
      const started = Date.now();
      const { made, parts } = await this.makeObject(principalId, upload, input);
      const view = await this.keepFile(principalId, upload, made);
      completed = true;
      if (made.object.sha256 === null) await this.jobs.hash([made.object.id]);
      this.logger.info(
        {
          uploadId: upload.id,
          fileId: view.file.id,
          bytes: made.object.bytes,
          parts: parts.length,
          how: made.how,
          ms: Date.now() - started,
        },
        'upload completed',
      );
      return view;
    } finally {
      if (!completed) await this.uploads.unclaim(principalId, upload.id);
    }
  }

  /** The file's object, by the first strategy that applies to the named parts. */
  private async makeObject(
    principalId: string,
    upload: UploadRow,
    input: UploadCompletionInput,
  ): Promise<{ made: CompletedObject; parts: UploadPartRow[] }> {
    let request: CompletionRequest = {
      principalId,
      upload,
      parts: await this.namedParts(principalId, upload, input.partIds),
      md5: input.md5,
    };
    const joined = await this.joinBlocks.complete(request);
    if (joined) return { made: joined, parts: request.parts };
    if (upload.s3UploadId) {
      await this.blockStaging.stageAll(principalId, upload);
      request = { ...request, parts: await this.namedParts(principalId, upload, input.partIds) };
    }
    const made = (await this.wholeObject.complete(request)) ?? (await this.composed.complete(request));
    return { made, parts: request.parts };
  }

  /** The file, in one unit of work with the upload's end: every part goes, the file's object holds the bytes. */
  private keepFile(
    principalId: string,
    upload: UploadRow,
    { object, kept }: CompletedObject,
  ): Promise<UploadView & { file: FileRow }> {
    return this.uow.run(
      async (work) => {
        const fileId = newId('file');
        if (kept === 'staged') await work.adopt(object);
        else if (!(await work.retain(principalId, object.id))) throw uploadConflict(upload);
        const file = await work.files.create(principalId, {
          id: fileId,
          objectId: object.id,
          filename: upload.filename,
          bytes: object.bytes,
          contentType: upload.mimeType,
          sha256: object.sha256,
          purpose: upload.purpose,
          createdAt: new Date(),
          expiresAt: null,
        });
        if (!(await work.uploads.markCompleted(principalId, upload.id, fileId))) throw uploadConflict(upload);
        await work.uploads.closeMultipart(principalId, upload.id);
        // Every part goes, named or not: the file's object holds the bytes it needs.
        await work.release(await work.uploads.dropParts(principalId, upload.id));
        return { upload: { ...upload, status: 'completed' as const, fileId, s3UploadId: null }, file };
      },
      { staged: kept === 'staged' ? [object] : [] },
    );
  }

  /**
   * The parts `partIds` names, in that order, without the empty ones; each must be this upload's, and
   * together exactly `bytes`.
   */
  private async namedParts(principalId: string, upload: UploadRow, partIds: string[]): Promise<UploadPartRow[]> {
    const received = new Map((await this.uploads.listParts(principalId, upload.id)).map((part) => [part.id, part]));
    const unknown = partIds.filter((partId) => !received.has(partId));
    if (unknown.length > 0)
      throw ApiError.invalid(
        `part_ids names parts this upload does not have: ${unknown.slice(0, 5).join(', ')}.`,
        'part_ids',
      );
    const parts = partIds.map((partId) => received.get(partId)!);
    const total = parts.reduce((sum, part) => sum + Number(part.bytes), 0);
    if (total !== Number(upload.bytes))
      throw ApiError.invalid(
        `The named parts hold ${total} bytes; the upload was created with bytes ${upload.bytes}.`,
        'bytes',
      );
    return parts.filter((part) => part.bytes > 0n);
  }
}
