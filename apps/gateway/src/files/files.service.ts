import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiError, PurgeProducer } from '@app/common';
import { isId, newId } from '@app/contracts';
import { FileRepository, PrismaService, StoredObjectRepository, type FileRow } from '@app/db';
import { DownloadService } from '../downloads/download.service';
import { type ListQuery } from '../http/list-query';
import { MultipartUploadService } from '../uploads/multipart-upload.service';
import { ObjectKeeper } from '../uploads/object-keeper.service';
import { checkFileField, readFileFields, toPurpose } from './file-fields';

/** Uploaded files (`/v1/files`), scoped to the calling principal. */
@Injectable()
export class FilesService {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(MultipartUploadService) private readonly uploads: MultipartUploadService,
    @Inject(ObjectKeeper) private readonly keeper: ObjectKeeper,
    @Inject(DownloadService) private readonly downloads: DownloadService,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
  ) {}

  async upload(req: Request, principalId: string): Promise<FileRow> {
    const upload = await this.uploads.receive(req, principalId, checkFileField);
    try {
      const { purpose, expiresInSeconds } = readFileFields(upload.fields);
      const createdAt = new Date();
      return await this.prisma.$transaction(async (tx) => {
        await this.objects.markReady(tx, principalId, upload.object.id, upload.receipt.bytes, upload.receipt.sha256);
        return this.files.create(tx, principalId, {
          id: newId('file'),
          objectId: upload.object.id,
          filename: upload.filename,
          bytes: upload.receipt.bytes,
          contentType: upload.contentType,
          sha256: upload.receipt.sha256,
          purpose,
          createdAt,
          expiresAt: expiresInSeconds === null ? null : new Date(createdAt.getTime() + expiresInSeconds * 1000),
        });
      });
    } catch (error) {
      await this.keeper.discard(upload.object);
      throw error;
    }
  }

  async get(principalId: string, id: string): Promise<FileRow> {
    const file = isId('file', id) ? await this.files.findForOwner(principalId, id) : null;
    if (!file) throw ApiError.notFound('file');
    return file;
  }

  async list(principalId: string, query: ListQuery, purpose: string | undefined) {
    const afterSeq = query.after ? await this.files.cursorSeq(principalId, query.after) : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a file in this list.', 'after');
    return this.files.listForOwner(principalId, { ...query, afterSeq, purpose: purpose === undefined ? undefined : toPurpose(purpose) });
  }

  async download(req: Request, res: Response, principalId: string, id: string): Promise<void> {
    await this.downloads.send(req, res, await this.get(principalId, id));
  }

  async delete(principalId: string, id: string): Promise<void> {
    if (!isId('file', id)) throw ApiError.notFound('file');
    const released = await this.prisma.$transaction(async (tx) => {
      const objectId = await this.files.markDeleted(tx, principalId, id);
      if (!objectId) throw ApiError.notFound('file');
      return this.objects.release(tx, [objectId]);
    });
    await this.purges.enqueue(released);
  }
}
