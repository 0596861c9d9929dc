import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { ApiError, APP_CONFIG, ObjectStore, type GatewayConfig } from '@app/common';
import { isId, MIN_BLOCK_BYTES, newId } from '@app/contracts';
import { FileRepository, UploadRepository, type FileRow, type UploadPartRow, type UploadRow } from '@app/db';
import { UnitOfWork, type StagedObject } from '@app/lifecycle';
import type { UploadBody } from '../../http/upload-body';
import { effectiveLimitsOf } from '../../limits/effective-limits';
import { STRICT_ENVELOPE_BYTES, UploadReceiver } from '../receiver/upload-receiver';
import { UploadCompletion } from '../resumable/completion/upload-completion';
import { PendingUploads } from '../resumable/pending-uploads';
import { UploadAdmission } from '../resumable/upload-admission';
import { type UploadView, uploadConflict, visibleStatus } from '../resumable/upload-status';
import { type ArrivalTicket, PartArrivalOrder } from './part-arrival';
import type { CompleteUploadInput, CreateUploadInput } from './upload-request';

/** A part request at least this long carries at least MIN_BLOCK_BYTES of data (see strictEnvelope): it is a block. */
const BLOCK_REQUEST_MIN_BYTES = MIN_BLOCK_BYTES + STRICT_ENVELOPE_BYTES;

/** The request's Content-Length, or null when it declares none (chunked). */
const declaredLength = (body: UploadBody): number | null => {
  const value = Number(body.headers['content-length']);
  return body.headers['content-length'] !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : null;
};

/**
 * Resumable uploads (`/v1/uploads`, OpenAI's Uploads API). An upload of 5 MiB or more owns one S3
 * multipart upload at its final key, opened when it is created. Each part of 5 MiB or more streams into
 * a block of that upload's S3 part numbers (taken in Postgres, so parts sent at once never collide);
 * smaller parts are objects of their own. Completion with blocks named in the order they were taken —
 * what a client sending its file front to back does — is one CompleteMultipartUpload: no byte is
 * copied or read again, and the file is "uploaded" until the worker has measured its SHA-256. Any other
 * order (re-sent parts, parts named out of order, an `md5` to check) first completes every block into
 * one staged object, then composes the named byte ranges on the storage side and hashes them, so the
 * file is "processed" at once (resumable/completion). Which gateway does what to an upload is settled in
 * Postgres (conditional claims), never in memory, so any replica serves any request.
 */
@Injectable()
export class UploadsService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(UploadReceiver) private readonly receiver: UploadReceiver,
    @Inject(ObjectStore) private readonly store: ObjectStore,
    @Inject(PartArrivalOrder) private readonly arrivals: PartArrivalOrder,
    @Inject(UploadAdmission) private readonly admission: UploadAdmission,
    @Inject(PendingUploads) private readonly pendingUploads: PendingUploads,
    @Inject(UploadCompletion) private readonly completion: UploadCompletion,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async create(principalId: string, input: CreateUploadInput): Promise<UploadView> {
    const createdAt = new Date();
    // Only an upload that can hold a block gets a multipart upload (tus uploads write objects, in order).
    const storageKey = input.bytes >= MIN_BLOCK_BYTES ? `uploads/${randomUUID()}` : null;
    const s3UploadId = storageKey ? await this.store.openMultipart(storageKey, input.mimeType) : null;
    try {
      const upload = await this.pendingUploads.createWithinLimit(principalId, {
        id: newId('upload'),
        filename: input.filename,
        purpose: input.purpose,
        bytes: input.bytes,
        mimeType: input.mimeType,
        createdAt,
        expiresAt: new Date(createdAt.getTime() + input.expiresInSeconds * 1000),
        storageKey,
        s3UploadId,
      });
      return { upload, file: null };
    } catch (error) {
      if (storageKey && s3UploadId) await this.store.abortMultipart(storageKey, s3UploadId).catch(() => undefined);
      throw error;
    }
  }

  async get(principalId: string, id: string): Promise<UploadView> {
    const upload = await this.find(principalId, id);
    return { upload, file: await this.fileOf(principalId, upload) };
  }

  async listParts(principalId: string, id: string): Promise<UploadPartRow[]> {
    const upload = await this.find(principalId, id);
    return this.uploads.listParts(principalId, upload.id);
  }

  /**
   * A part is admitted first (UploadAdmission: room reserved against every cap before a byte is read).
   * One of 5 MiB or more then streams into the next block of the upload's multipart upload, which S3
   * takes only once the whole request has been read; a smaller one into an object of its own. Then, if
   * the upload is still pending, the part is kept in place of its reservation.
   */
  async addPart(principalId: string, id: string, body: UploadBody, arrival?: ArrivalTicket): Promise<UploadPartRow> {
    const declared = declaredLength(body);
    const { maxUploadPartBytes } = effectiveLimitsOf(this.config);
    const request = {
      minBytes: declared === null ? 0 : Math.max(0, declared - STRICT_ENVELOPE_BYTES),
      maxBytes: Math.min(declared ?? maxUploadPartBytes, maxUploadPartBytes),
      asBlock: declared !== null && declared >= BLOCK_REQUEST_MIN_BYTES,
    };
    // Blocks are taken in the order the parts arrived here (see PartArrivalOrder).
    const { upload, reservation } = await this.arrivals.inTurn(arrival, async () =>
      this.admission.admit(principalId, await this.find(principalId, id), request),
    );
    const options = { fileField: 'data', maxBytes: reservation.bytes, isNamed: false, strictEnvelope: true };
    // Whether S3 holds (or may hold) the block: its room then stays taken until the upload ends.
    let stored = false;
    let mayBeStored = false;
    try {
      return await this.admission.whileStreaming(reservation, async () => {
        if (reservation.block === null) {
          const received = await this.receiver.receive(body, principalId, () => undefined, options);
          return await this.keepPart(principalId, upload.id, reservation.id, received.staged, null);
        }
        const block = reservation.block;
        let receipt: { bytes: number; sha256: string };
        try {
          ({ stored: receipt } = await this.receiver.receiveInto(
            body,
            () => undefined,
            { ...options, endsWithRequest: true },
            {
              write: async (stream, put) => {
                let sent = false;
                stream.once('end', () => (sent = true));
                try {
                  const written = await this.store.putBlock(upload.storageKey!, upload.s3UploadId!, block, stream, put);
                  stored = true;
                  return written;
                } catch (error) {
                  // Storage refuses (4xx) before it writes; once it has the block, other failures may follow the write.
                  mayBeStored = sent && !(error instanceof ApiError && error.status < 500);
                  throw error;
                }
              },
              discard: async () => undefined,
            },
          ));
        } catch (error) {
          const now = await this.uploads.findForOwner(principalId, upload.id);
          if (now && (now.status !== 'pending' || !now.s3UploadId)) throw uploadConflict(now);
          throw error;
        }
        return await this.keepPart(principalId, upload.id, reservation.id, null, { block, ...receipt });
      });
    } catch (error) {
      throw await this.admission.giveBack(reservation, error, {
        mayBeStored: stored || mayBeStored,
        what: 'part',
        param: 'data',
      });
    }
  }

  private keepPart(
    principalId: string,
    uploadId: string,
    reservationId: string,
    staged: (StagedObject & { sha256: string }) | null,
    block: { block: number; bytes: number; sha256: string } | null,
  ): Promise<UploadPartRow> {
    const bytes = staged?.bytes ?? block!.bytes;
    return this.uow.run(
      async (work) => {
        const locked = await work.uploads.lockShared(principalId, uploadId);
        if (!locked) throw ApiError.notFound('upload');
        if (locked.status !== 'pending' || visibleStatus(locked) !== 'pending') throw uploadConflict(locked);
        // The reservation admitted at most these bytes; it becomes the part, so the caps still hold.
        if (!(await work.uploads.settleReservation(reservationId))) throw uploadConflict(locked);
        if (staged) await work.adopt(staged);
        return work.uploads.addPart(principalId, {
          id: newId('uploadPart'),
          uploadId,
          objectId: staged?.id ?? null,
          block: block?.block ?? null,
          bytes,
          sha256: staged?.sha256 ?? block!.sha256,
        });
      },
      { staged: staged ? [staged] : [] },
    );
  }

  /** Completes the upload into its file (see UploadCompletion); completing a completed upload returns its file. */
  async complete(principalId: string, id: string, input: CompleteUploadInput): Promise<UploadView> {
    return this.completion.complete(principalId, await this.find(principalId, id), input);
  }

  async cancel(principalId: string, id: string): Promise<UploadView> {
    return this.pendingUploads.cancel(principalId, await this.find(principalId, id));
  }

  /** An upload of the Uploads API; another protocol's upload (tus) is not found here, as another principal's is not. */
  private async find(principalId: string, id: string): Promise<UploadRow> {
    const upload = isId('upload', id) ? await this.uploads.findForOwner(principalId, id) : null;
    if (!upload || upload.protocol !== 'openai') throw ApiError.notFound('upload');
    return upload;
  }

  private async fileOf(principalId: string, upload: UploadRow): Promise<FileRow | null> {
    return upload.fileId ? this.files.findForOwner(principalId, upload.fileId) : null;
  }
}
