import { Inject, Injectable } from '@nestjs/common';
import { ApiError, LOGGER, type AppLogger } from '@app/common';
import { isId, newId } from '@app/contracts';
import {
  FileRepository,
  ObjectStager,
  UnitOfWork,
  UploadRepository,
  type FileRow,
  type UploadPartRow,
  type UploadRow,
} from '@app/db';
import { MAX_UPLOAD_PART_BYTES, type UploadBody } from '../http/upload-body';
import { UploadReceiver } from './upload-receiver';
import type { CompleteUploadInput, CreateUploadInput } from './upload-request';

/**
 * How long one completion holds an upload. Composing and hashing take about a second per 150 MB; past
 * this a claim whose gateway died lapses, and another completion may take the upload.
 */
const COMPLETION_CLAIM_MS = 15 * 60_000;

export interface UploadView {
  upload: UploadRow;
  file: FileRow | null;
}

const conflict = (upload: UploadRow) =>
  new ApiError(
    'upload_conflict',
    upload.status === 'completing'
      ? `Upload ${upload.id} is being completed by another request; retry once it is done.`
      : `Upload ${upload.id} is ${upload.status}, not pending.`,
  );

/** The status a client sees: a pending upload past its expiry is expired, before the sweep gets to it. */
export const visibleStatus = (upload: UploadRow, now = new Date()) =>
  (upload.status === 'pending' || upload.status === 'completing') && upload.expiresAt <= now
    ? 'expired'
    : upload.status === 'completing'
      ? 'pending'
      : upload.status;

/**
 * Resumable uploads (`/v1/uploads`, OpenAI's Uploads API). Each part streams into a stored object of
 * its own; completion composes the named parts into the file's object on the storage side, then one
 * unit of work keeps the file, marks the upload completed and releases every part. Which gateway does
 * what to an upload is settled in Postgres (a conditional claim), never in memory, so any replica can
 * serve any request and racing completions cannot both win.
 */
@Injectable()
export class UploadsService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(UploadReceiver) private readonly receiver: UploadReceiver,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async create(principalId: string, input: CreateUploadInput): Promise<UploadView> {
    const createdAt = new Date();
    const upload = await this.uploads.create(principalId, {
      id: newId('upload'),
      filename: input.filename,
      purpose: input.purpose,
      bytes: input.bytes,
      mimeType: input.mimeType,
      createdAt,
      expiresAt: new Date(createdAt.getTime() + input.expiresInSeconds * 1000),
    });
    return { upload, file: null };
  }

  async get(principalId: string, id: string): Promise<UploadView> {
    const upload = await this.find(principalId, id);
    return { upload, file: await this.fileOf(principalId, upload) };
  }

  async listParts(principalId: string, id: string): Promise<UploadPartRow[]> {
    const upload = await this.find(principalId, id);
    return this.uploads.listParts(principalId, upload.id);
  }

  /** The part streams into a stored object first; then, if the upload is still pending, it is kept. */
  async addPart(principalId: string, id: string, body: UploadBody): Promise<UploadPartRow> {
    const upload = await this.find(principalId, id);
    if (visibleStatus(upload) !== 'pending' || upload.status !== 'pending') throw conflict(upload);
    const received = await this.receiver.receive(body, principalId, () => undefined, {
      fileField: 'data',
      maxBytes: MAX_UPLOAD_PART_BYTES,
      isNamed: false,
    });
    return this.uow.run(
      async (work) => {
        const locked = await work.uploads.lockShared(principalId, upload.id);
        if (!locked) throw ApiError.notFound('upload');
        if (locked.status !== 'pending' || visibleStatus(locked) !== 'pending') throw conflict(locked);
        // Parts beyond what the file needs twice over are refused: a client cannot park unbounded bytes.
        const receivedSoFar = (await work.uploads.listParts(principalId, upload.id)).reduce(
          (sum, part) => sum + Number(part.bytes),
          0,
        );
        if (receivedSoFar + received.staged.bytes > 2 * Number(locked.bytes) + MAX_UPLOAD_PART_BYTES)
          throw new ApiError('file_too_large', 'The parts of this upload already hold twice its bytes.', 'data');
        await work.adopt(received.staged);
        return work.uploads.addPart(principalId, {
          id: newId('uploadPart'),
          uploadId: upload.id,
          objectId: received.staged.id,
          bytes: received.staged.bytes,
          sha256: received.staged.sha256,
        });
      },
      { staged: [received.staged] },
    );
  }

  /**
   * Claims the upload (one completion at a time, across gateways), checks the named parts against
   * `bytes`, composes them, checks the MD5, and keeps the file. Any failed check gives the claim back:
   * the upload stays pending for a corrected retry. Completing a completed upload returns its file.
   */
  async complete(principalId: string, id: string, input: CompleteUploadInput): Promise<UploadView> {
    const current = await this.find(principalId, id);
    if (current.status === 'completed') return this.get(principalId, id);
    const claim = await this.uploads.claim(principalId, current.id, new Date(Date.now() + COMPLETION_CLAIM_MS));
    if (!claim.won) {
      if (!claim.upload) throw ApiError.notFound('upload');
      if (claim.upload.status === 'completed') return this.get(principalId, id);
      throw conflict(claim.upload.status === 'pending' ? { ...claim.upload, status: 'expired' } : claim.upload);
    }
    const upload = claim.upload;
    let completed = false;
    try {
      const parts = await this.namedParts(principalId, upload, input.partIds);
      const composed = await this.stager.stageComposed(
        principalId,
        parts.map((part) => part.storageKey),
        upload.mimeType,
      );
      if (input.md5 !== null && composed.md5 !== input.md5) {
        await this.stager.discard([composed]);
        throw ApiError.invalid(`md5 does not match the parts' bytes (their MD5 is ${composed.md5}).`, 'md5');
      }
      const view = await this.uow.run(
        async (work) => {
          const fileId = newId('file');
          await work.adopt(composed);
          const file = await work.files.create(principalId, {
            id: fileId,
            objectId: composed.id,
            filename: upload.filename,
            bytes: composed.bytes,
            contentType: upload.mimeType,
            sha256: composed.sha256,
            purpose: upload.purpose,
            createdAt: new Date(),
            expiresAt: null,
          });
          if (!(await work.uploads.markCompleted(principalId, upload.id, fileId))) throw conflict(upload);
          // Every part goes, named or not: the file's object is a copy of the bytes it needs.
          await work.release(await work.uploads.dropParts(principalId, upload.id));
          return { upload: { ...upload, status: 'completed' as const, fileId }, file };
        },
        { staged: [composed] },
      );
      completed = true;
      this.logger.info(
        { uploadId: upload.id, fileId: view.file.id, bytes: composed.bytes, parts: parts.length },
        'upload completed',
      );
      return view;
    } finally {
      if (!completed) await this.uploads.unclaim(principalId, upload.id);
    }
  }

  async cancel(principalId: string, id: string): Promise<UploadView> {
    const upload = await this.find(principalId, id);
    return this.uow.run(async (work) => {
      const cancelled = await work.uploads.markCancelled(principalId, upload.id);
      if (!cancelled) {
        const now = await work.uploads.findForOwner(principalId, upload.id);
        if (now?.status === 'cancelled') return { upload: now, file: null };
        throw conflict(now ?? upload);
      }
      await work.release(await work.uploads.dropParts(principalId, upload.id));
      return { upload: cancelled, file: null };
    });
  }

  private async find(principalId: string, id: string): Promise<UploadRow> {
    const upload = isId('upload', id) ? await this.uploads.findForOwner(principalId, id) : null;
    if (!upload) throw ApiError.notFound('upload');
    return upload;
  }

  private async fileOf(principalId: string, upload: UploadRow): Promise<FileRow | null> {
    return upload.fileId ? this.files.findForOwner(principalId, upload.fileId) : null;
  }

  /** The parts `partIds` names, in that order; each must be this upload's, and together exactly `bytes`. */
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
    return parts;
  }
}
