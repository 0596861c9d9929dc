import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { type Readable, Transform } from 'node:stream';
import { ApiError, APP_CONFIG, ClientGoneError, fileLimitsOf, type GatewayConfig } from '@app/common';
import { isId, newId } from '@app/contracts';
import { ObjectStager, UnitOfWork, UploadRepository, type UploadRow } from '@app/db';
import { DEFAULT_UPLOAD_EXPIRY_SECONDS } from '../uploads/upload-request';
import { UploadsService } from '../uploads/uploads.service';
import type { TusChecksumAlgorithm, TusMetadata } from './tus-protocol';

/**
 * How long one PATCH may hold a tus upload. A PATCH whose gateway dies holds it this long; one whose
 * client goes away lets go at once.
 */
const PATCH_CLAIM_MS = 15 * 60_000;

export interface TusPatch {
  offset: number;
  body: Readable;
  /** False when the body stopped before its end (the client went away). */
  isComplete(): boolean;
  checksum: { algorithm: TusChecksumAlgorithm; digest: string } | null;
}

/**
 * tus 1.0 on the machinery of /v1/uploads: a tus upload is an `uploads` row (protocol tus) whose
 * offset is the sum of its parts; each PATCH stages one part. A PATCH first claims the upload at its
 * offset in Postgres, so two PATCHes on any gateways cannot both write (the loser gets 409) and the
 * offset only ever moves by a part that was kept. When the offset reaches the length, the parts are
 * composed into a file exactly as an OpenAI upload's completion does.
 */
@Injectable()
export class TusService {
  constructor(
    @Inject(UploadRepository) private readonly uploads: UploadRepository,
    @Inject(UploadsService) private readonly completions: UploadsService,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
  ) {}

  get maxSize(): number {
    return fileLimitsOf(this.config).maxFileBytes;
  }

  async create(principalId: string, length: number, metadata: TusMetadata, rawMetadata: string | null) {
    if (length > this.maxSize)
      throw new ApiError(
        'file_too_large',
        `Upload-Length is ${length}; max_upload_bytes is ${this.maxSize} (see GET /v1/limits).`,
        'Upload-Length',
      );
    const createdAt = new Date();
    return this.completions.createWithinLimit(principalId, {
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
        maxBytes: Number(upload.bytes) - patch.offset,
        contentType: 'application/octet-stream',
      });
      if (patch.checksum && hash!.digest('base64') !== patch.checksum.digest) {
        await this.stager.discard([staged]);
        throw new ApiError('checksum_mismatch', `The PATCH body does not match its Upload-Checksum.`);
      }
      const offset = patch.offset + staged.bytes;
      await this.uow.run(
        async (work) => {
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
      advanced = true;
      if (offset < Number(upload.bytes)) return { offset, upload };
      return { offset, upload: await this.finish(principalId, upload) };
    } finally {
      if (!advanced) await this.uploads.releasePatch(principalId, upload.id);
    }
  }

  /** Every part, in order, becomes the file (as POST /v1/uploads/{id}/complete would do it). */
  private async finish(principalId: string, upload: UploadRow): Promise<UploadRow> {
    const parts = await this.uploads.listParts(principalId, upload.id);
    const view = await this.completions.complete(principalId, upload.id, {
      partIds: parts.map((part) => part.id),
      md5: null,
    });
    return view.upload;
  }

  async terminate(principalId: string, id: string): Promise<void> {
    const upload = await this.find(principalId, id);
    await this.completions.cancel(principalId, upload.id);
  }
}
