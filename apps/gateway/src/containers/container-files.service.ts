import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '@app/common';
import { isId } from '@app/contracts';
import { ContainerFileRepository, type ContainerFileListing, type ContainerFileRow, type Page } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import type { ArtifactOrigin } from '../auth/task-scope';
import { type Download, Downloads } from '../downloads/downloads';
import type { ListQuery } from '../http/list-query';
import type { UploadBody } from '../http/upload-body';
import { UploadReceiver } from '../uploads/receiver/upload-receiver';
import { ArtifactWriter } from './artifact-writer.service';
import { copyFileInto, holdContainerForWrite } from './container-writes';
import { ContainersService } from './containers.service';

const ignoreFields = () => undefined;

/** Container files: the artifacts. A file is reachable only through its own live container. */
@Injectable()
export class ContainerFilesService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(ContainersService) private readonly containers: ContainersService,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(UploadReceiver) private readonly receiver: UploadReceiver,
    @Inject(ArtifactWriter) private readonly artifacts: ArtifactWriter,
    @Inject(Downloads) private readonly downloads: Downloads,
  ) {}

  /** A multipart upload into the container, through the same streaming path and limits as /v1/files. */
  async upload(
    principalId: string,
    containerId: string,
    body: UploadBody,
    origin: ArtifactOrigin,
  ): Promise<ContainerFileRow> {
    await this.containers.get(principalId, containerId);
    const upload = await this.receiver.receive(body, principalId, ignoreFields);
    return this.artifacts.commit(principalId, containerId, origin, upload);
  }

  /** Copies an uploaded file in by id: a new container file sharing the stored object (no second copy). */
  async copy(
    principalId: string,
    containerId: string,
    body: Record<string, unknown>,
    origin: ArtifactOrigin,
  ): Promise<ContainerFileRow> {
    await this.containers.get(principalId, containerId);
    const fileId = body.file_id;
    if (typeof fileId !== 'string')
      throw ApiError.invalid('Send a multipart file part, or JSON {"file_id": "file_…"}.', 'file_id');
    return this.uow.run(async (work) =>
      copyFileInto(
        work,
        principalId,
        await holdContainerForWrite(work, principalId, containerId),
        fileId,
        'file_id',
        origin,
      ),
    );
  }

  async get(principalId: string, containerId: string, id: string): Promise<ContainerFileRow> {
    const file =
      isId('container', containerId) && isId('file', id)
        ? await this.containerFiles.findForOwner(principalId, containerId, id)
        : null;
    if (!file) throw ApiError.notFound('container file');
    return file;
  }

  async list(principalId: string, containerId: string, query: ListQuery): Promise<Page<ContainerFileListing>> {
    await this.containers.get(principalId, containerId);
    const afterSeq = query.after
      ? await this.containerFiles.cursorSeq(principalId, { containerId }, query.after)
      : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a file in this container.', 'after');
    return this.containerFiles.listForContainer(principalId, containerId, { ...query, afterSeq });
  }

  async download(principalId: string, containerId: string, id: string): Promise<Download> {
    const file = await this.get(principalId, containerId, id);
    return this.downloads.ofStored(
      file,
      async () => !!(await this.containerFiles.findForOwner(principalId, containerId, id)),
    );
  }

  /**
   * Deletes one artifact and the session's archives (they hold its bytes), under the session's lock; of
   * concurrent deletes of it, its container or its session, exactly one releases its reference.
   */
  async delete(principalId: string, containerId: string, id: string): Promise<void> {
    const file = await this.get(principalId, containerId, id);
    await this.uow.run(async (work) => {
      if (!(await work.sessions.lockLive(principalId, file.sessionId, 'exclusive')))
        throw ApiError.notFound('container file');
      const objectId = await work.containerFiles.markDeleted(principalId, containerId, id);
      if (!objectId) throw ApiError.notFound('container file');
      const archives = await work.archives.deleteForSession(principalId, file.sessionId);
      await work.release([objectId, ...archives]);
    });
  }
}
