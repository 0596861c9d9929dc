import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { type Readable, Transform } from 'node:stream';
import { ApiError, APP_CONFIG, ClientGoneError, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';
import { isId, newId } from '@app/contracts';
import { UploadRepository, type UploadReservationRow, type UploadRow } from '@app/db';
import { ObjectStager, UnitOfWork } from '@app/lifecycle';
import { UploadCompletion } from '../uploads/resumable/completion/upload-completion';
import { DEFAULT_UPLOAD_EXPIRY_SECONDS, PendingUploads } from '../uploads/resumable/pending-uploads';
import { UploadAdmission } from '../uploads/resumable/upload-admission';
import type { TusChecksumAlgorithm, TusMetadata } from './tus-protocol';

/**
 * How long one PATCH may hold a tus upload. A PATCH whose gateway dies holds it this long; one whose
 * client goes away lets go at once.
 */
const PATCH_CLAIM_MS = 15 * 60_000;

export interface TusPatch {
  offset: number;
  body: Readable;
  /** The body's Content-Length; null when chunked. */
  declaredBytes: number | null;
  /** False when the body stopped before its end (the client went away). */
  isComplete(): boolean;
  checksum: { algorithm: TusChecksumAlgorithm; digest: string } | null;
}

/**
 * tus 1.0 on the machinery of /v1/uploads: a tus upload is an `uploads` row (protocol tus) whose
 * offset is the sum of its parts; each PATCH stages one part. A PATCH first claims the upload at its
 * offset in Postgres, so two PATCHes on any gateways cannot both write (the loser gets 409) and the
 * offset only ever moves by a part that was kept. When the offset reaches the length, the parts are
 * completed into a file exactly as an OpenAI upload's completion does (UploadCompletion).
 */
@Injectable()
export class TusService {
  constructor(
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(PendingUploads) private readonly pendingUploads: PendingUploads,
    @Inject(UploadCompletion) private readonly completion: UploadCompletion,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(UploadAdmission) private readonly admission: UploadAdmission,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  get maxSize(): number {
    return effectiveLimitsOf(this.config).maxUploadBytes;
  }

  async create(principalId: string, length: number, metadata: TusMetadata, rawMetadata: string | null) {
    if (length > this.maxSize)
      throw new ApiError(
        'file_too_large',
        `Upload-Length is ${length}; max_upload_bytes is ${this.maxSize} (see GET /v1/limits).`,
        'Upload-Length',
      );
    const createdAt = new Date();
    return this.pendingUploads.createWithinLimit(principalId, {
      id: newId('upload'),
      filename: metadata.filename,
      purpose: metadata.purpose,
      bytes: length,
      mimeType: metadata.contentType,
      createdAt,
      expiresAt: new Date(createdAt.getTime() + DEFAULT_UPLOAD_EXPIRY_SECONDS * 1000),
      protocol: 'tus',
      tusMetadata: rawMetadata,
    });
  }

  /** The upload as HEAD reports it; cancelled, expired and other protocols' uploads are 404. */
  async find(principalId: string, id: string): Promise<UploadRow> {
    const upload = isId('upload', id) ? await this.uploads.findForOwner(principalId, id) : null;
    const gone = !upload || upload.protocol !== 'tus' || upload.status === 'cancelled' || upload.status === 'expired';
    if (gone || (upload.status !== 'completed' && upload.expiresAt <= new Date())) throw ApiError.notFound('upload');
    return upload;
  }

  /** Writes one PATCH at `offset`; returns the new offset (the file exists once it equals the length). */
  async patch(principalId: string, id: string, patch: TusPatch): Promise<{ offset: number; upload: UploadRow }> {
    const upload = await this.find(principalId, id);
    const conflict = () =>
      new ApiError('upload_conflict', `Upload-Offset is not the upload's offset, or another PATCH is writing it.`);
    if (upload.status !== 'pending' || Number(upload.offsetBytes) !== patch.offset) throw conflict();
    if (
      !(await this.uploads.claimForPatch(principalId, upload.id, patch.offset, new Date(Date.now() + PATCH_CLAIM_MS)))
    )
      throw conflict();
    let advanced = false;
    try {
      const remaining = Number(upload.bytes) - patch.offset;
      if (patch.declaredBytes !== null && patch.declaredBytes > remaining)
        throw new ApiError(
          'file_too_large',
          `The PATCH carries ${patch.declaredBytes} bytes; the upload has room for ${remaining}.`,
          'Upload-Length',
        );
      const declared = patch.declaredBytes;
      const { reservation } = await this.admission.admit(principalId, upload, {
        minBytes: declared ?? 0,
        maxBytes: declared ?? remaining,
        asBlock: false,
      });
      try {
        const offset = await this.admission.whileStreaming(reservation, () =>
          this.write(principalId, upload, patch, reservation),
        );
        advanced = true;
        if (offset < Number(upload.bytes)) return { offset, upload };
        return { offset, upload: await this.finish(principalId, upload) };
      } catch (error) {
        if (advanced) throw error;
        throw await this.admission.giveBack(reservation, error, {
          mayBeStored: false,
          what: 'PATCH',
          param: 'Upload-Length',
        });
      }
    } finally {
      if (!advanced) await this.uploads.releasePatch(principalId, upload.id);
    }
  }

  /** Stages the PATCH's bytes (at most its reservation) and keeps them as the next part; returns the new offset. */
  private async write(
    principalId: string,
    upload: UploadRow,
    patch: TusPatch,
    reservation: UploadReservationRow,
  ): Promise<number> {
    const conflict = () =>
      new ApiError('upload_conflict', `Upload-Offset is not the upload's offset, or another PATCH is writing it.`);
    const hash = patch.checksum ? createHash(patch.checksum.algorithm) : null;
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash?.update(chunk);
        done(null, chunk);
      },
    });
    patch.body.on('error', (error) => hashing.destroy(error));
    patch.body.on('close', () => {
      if (!patch.isComplete()) hashing.destroy(new ClientGoneError('client disconnected mid-PATCH'));
    });
    patch.body.pipe(hashing);
    const staged = await this.stager.stage(principalId, hashing, {
      maxBytes: reservation.bytes,
      contentType: 'application/octet-stream',
    });
    if (patch.checksum && hash!.digest('base64') !== patch.checksum.digest) {
      await this.stager.discard([staged]);
      throw new ApiError('checksum_mismatch', `The PATCH body does not match its Upload-Checksum.`);
    }
    await this.uow.run(
      async (work) => {
        if (!(await work.uploads.settleReservation(reservation.id))) throw conflict();
        await work.adopt(staged);
        await work.uploads.addPart(principalId, {
          id: newId('uploadPart'),
          uploadId: upload.id,
          objectId: staged.id,
          bytes: staged.bytes,
          sha256: staged.sha256,
        });
        if (!(await work.uploads.advance(principalId, upload.id, patch.offset, staged.bytes))) throw conflict();
      },
      { staged: [staged] },
    );
    return patch.offset + staged.bytes;
  }

  /** Every part, in order, becomes the file, by the strategies POST /v1/uploads/{id}/complete uses. */
  private async finish(principalId: string, upload: UploadRow): Promise<UploadRow> {
    const parts = await this.uploads.listParts(principalId, upload.id);
    const view = await this.completion.complete(principalId, upload, {
      partIds: parts.map((part) => part.id),
      md5: null,
    });
    return view.upload;
  }

  async terminate(principalId: string, id: string): Promise<void> {
    const upload = await this.find(principalId, id);
    await this.pendingUploads.cancel(principalId, upload);
  }
}
