import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiError, PurgeProducer } from '@app/common';
import { isId, newId } from '@app/contracts';
import { ContainerFileRepository, PrismaService, SessionRepository, StoredObjectRepository, type ContainerFileRow, type ContainerRow, type Tx } from '@app/db';
import type { ArtifactOrigin } from '../auth/task-scope';
import { ArtifactWriter } from './artifact-writer.service';
import { FileCopier } from './file-copier.service';
import { DownloadService } from '../downloads/download.service';
import type { ListQuery } from '../http/list-query';
import { MultipartUploadService } from '../uploads/multipart-upload.service';
import { ContainersService } from './containers.service';

const ignoreFields = () => undefined;

/** Container files: the artifacts. A file is reachable only through its own live container. */
@Injectable()
export class ContainerFilesService {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(ContainersService) private readonly containers: ContainersService,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(MultipartUploadService) private readonly uploads: MultipartUploadService,
    @Inject(ArtifactWriter) private readonly artifacts: ArtifactWriter,
    @Inject(DownloadService) private readonly downloads: DownloadService,
    @Inject(FileCopier) private readonly copier: FileCopier,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
  ) {}

  /** A multipart upload into the container, through the same streaming path and limits as /v1/files. */
  async upload(req: Request, principalId: string, containerId: string, origin: ArtifactOrigin): Promise<ContainerFileRow> {
    this.uploads.checkDeclaredLength(req);
    await this.containers.get(principalId, containerId);
    const upload = await this.uploads.receive(req, principalId, ignoreFields);
    return this.artifacts.commit(principalId, containerId, origin, upload);
  }

  /** Copies an uploaded file in by id: a new container file sharing the stored object (no second copy). */
  async copy(principalId: string, containerId: string, body: Record<string, unknown>, origin: ArtifactOrigin): Promise<ContainerFileRow> {
    await this.containers.get(principalId, containerId);
    const fileId = body.file_id;
    if (typeof fileId !== 'string') throw ApiError.invalid('Send a multipart file part, or JSON {"file_id": "file_…"}.', 'file_id');
    return this.prisma.$transaction(async (tx) => this.copier.copyInto(tx, principalId, await this.liveContainer(tx, principalId, containerId), fileId, 'file_id', origin));
  }

  async get(principalId: string, containerId: string, id: string): Promise<ContainerFileRow> {
    const file = isId('container', containerId) && isId('file', id) ? await this.containerFiles.findForOwner(principalId, containerId, id) : null;
    if (!file) throw ApiError.notFound('container file');
    return file;
  }

  async list(principalId: string, containerId: string, query: ListQuery) {
    await this.containers.get(principalId, containerId);
    const afterSeq = query.after ? await this.containerFiles.cursorSeq(principalId, { containerId }, query.after) : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a file in this container.', 'after');
    return this.containerFiles.listForContainer(principalId, containerId, { ...query, afterSeq });
  }

  async download(req: Request, res: Response, principalId: string, containerId: string, id: string): Promise<void> {
    await this.downloads.send(req, res, await this.get(principalId, containerId, id));
  }

  async delete(principalId: string, containerId: string, id: string): Promise<void> {
    if (!isId('container', containerId) || !isId('file', id)) throw ApiError.notFound('container file');
    const released = await this.prisma.$transaction(async (tx) => {
      const objectIds = await this.containerFiles.markDeleted(tx, principalId, containerId, id);
      if (!objectIds) throw ApiError.notFound('container file');
      return this.objects.release(tx, objectIds);
    });
    await this.purges.enqueue(released);
  }

  private async liveContainer(tx: Tx, principalId: string, containerId: string): Promise<ContainerRow> {
    const container = await this.sessions.findContainerForOwner(principalId, containerId, tx);
    if (!container) throw ApiError.notFound('container');
    return container;
  }
}
