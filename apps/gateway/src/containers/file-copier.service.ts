import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '@app/common';
import { isId, newId } from '@app/contracts';
import { USER_ORIGIN, type ArtifactOrigin } from '../auth/task-scope';
import { ContainerFileRepository, FileRepository, StoredObjectRepository, type ContainerFileRow, type ContainerRow, type Tx } from '@app/db';

/** Copies an uploaded file into a container: a new row and one more reference, never a second copy of the bytes. */
@Injectable()
export class FileCopier {
  constructor(
    @Inject(FileRepository) private readonly files: FileRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
  ) {}

  /** Inside the caller's transaction; `param` names the input in the 404 when the file is not the caller's. */
  async copyInto(tx: Tx, principalId: string, container: ContainerRow, fileId: unknown, param: string, origin: ArtifactOrigin = USER_ORIGIN): Promise<ContainerFileRow> {
    const file = isId('file', fileId) ? await this.files.findForOwner(principalId, fileId, tx) : null;
    if (!file || !(await this.objects.retain(tx, principalId, file.objectId))) throw ApiError.notFound('file', param);
    return this.containerFiles.create(tx, principalId, {
      id: newId('file'),
      sessionId: container.sessionId,
      containerId: container.id,
      objectId: file.objectId,
      filename: file.filename,
      bytes: file.bytes,
      contentType: file.contentType,
      sha256: file.sha256,
      ...origin,
      createdAt: new Date(),
    });
  }
}
