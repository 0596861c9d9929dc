import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '@app/common';
import { isId, newId } from '@app/contracts';
import { FileRepository, type FilePurpose, type FileRow, type Page } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import { type Download, Downloads } from '../downloads/downloads';
import type { ListQuery } from '../http/list-query';
import type { UploadBody } from '../http/upload-body';
import { UploadReceiver } from '../uploads/receiver/upload-receiver';
import { checkFileField, readFileFields } from './file-fields';

/** Uploaded files (`/v1/files`), scoped to the calling principal. */
@Injectable()
export class FilesService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(UploadReceiver) private readonly receiver: UploadReceiver,
    @Inject(Downloads) private readonly downloads: Downloads,
  ) {}

  /** The file part streams into the bucket; then one unit of work keeps it as a file, or nothing is kept. */
  async upload(principalId: string, body: UploadBody): Promise<FileRow> {
    const upload = await this.receiver.receive(body, principalId, checkFileField);
    return this.uow.run(
      async (work) => {
        const { purpose, expiresInSeconds } = readFileFields(upload.fields);
        const createdAt = new Date();
        await work.adopt(upload.staged);
        return work.files.create(principalId, {
          id: newId('file'),
          objectId: upload.staged.id,
          filename: upload.filename,
          bytes: upload.staged.bytes,
          contentType: upload.contentType,
          sha256: upload.staged.sha256,
          purpose,
          createdAt,
          expiresAt: expiresInSeconds === null ? null : new Date(createdAt.getTime() + expiresInSeconds * 1000),
        });
      },
      { staged: [upload.staged] },
    );
  }

  async get(principalId: string, id: string): Promise<FileRow> {
    const file = isId('file', id) ? await this.files.findForOwner(principalId, id) : null;
    if (!file) throw ApiError.notFound('file');
    return file;
  }

  async list(principalId: string, query: ListQuery & { purpose?: FilePurpose }): Promise<Page<FileRow>> {
    const afterSeq = query.after ? await this.files.cursorSeq(principalId, query.after) : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a file in this list.', 'after');
    return this.files.listForOwner(principalId, { ...query, afterSeq });
  }

  async download(principalId: string, id: string): Promise<Download> {
    const file = await this.get(principalId, id);
    return this.downloads.ofStored(file, async () => !!(await this.files.findForOwner(principalId, id)));
  }

  /** Of concurrent deletes exactly one succeeds and releases the file's reference; the others are 404. */
  async delete(principalId: string, id: string): Promise<void> {
    if (!isId('file', id)) throw ApiError.notFound('file');
    await this.uow.run(async (work) => {
      const objectId = await work.files.markDeleted(principalId, id);
      if (!objectId) throw ApiError.notFound('file');
      await work.release([objectId]);
    });
  }
}
