import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ApiError } from '@app/common';
import { newId } from '@app/contracts';
import { ContainerFileRepository, PrismaService, SessionRepository, StoredObjectRepository, type ContainerFileRow } from '@app/db';
import type { ArtifactOrigin } from '../auth/task-scope';
import { acceptFilename } from '../uploads/filename';
import { ObjectKeeper } from '../uploads/object-keeper.service';
import { ObjectWriter, type WrittenObject } from '../uploads/object-writer.service';

export interface StoredUpload extends WrittenObject {
  filename: string;
  contentType: string;
}

/** Puts stored bytes into a container as a container file: the one way an artifact comes to be. */
@Injectable()
export class ArtifactWriter {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectWriter) private readonly writer: ObjectWriter,
    @Inject(ObjectKeeper) private readonly keeper: ObjectKeeper,
  ) {}

  /**
   * Records an object already in the bucket as a file of a live container of the principal, in one
   * transaction; if the container went away meanwhile (or anything fails) the object is discarded.
   */
  async commit(principalId: string, containerId: string, origin: ArtifactOrigin, upload: StoredUpload): Promise<ContainerFileRow> {
    try {
      return await this.prisma.$transaction(async (tx) => {
        const container = await this.sessions.findContainerForOwner(principalId, containerId, tx);
        if (!container) throw ApiError.notFound('container');
        await this.objects.markReady(tx, principalId, upload.object.id, upload.receipt.bytes, upload.receipt.sha256);
        return this.containerFiles.create(tx, principalId, {
          id: newId('file'),
          sessionId: container.sessionId,
          containerId,
          objectId: upload.object.id,
          filename: upload.filename,
          bytes: upload.receipt.bytes,
          contentType: upload.contentType,
          sha256: upload.receipt.sha256,
          ...origin,
          createdAt: new Date(),
        });
      });
    } catch (error) {
      await this.keeper.discard(upload.object);
      throw error;
    }
  }

  /** Streams new bytes into the container (an agent writing an artifact in process). */
  async write(principalId: string, containerId: string, origin: ArtifactOrigin, file: { filename: string; contentType: string; body: Readable }): Promise<ContainerFileRow> {
    const filename = acceptFilename(file.filename, 'filename');
    const written = await this.writer.write(principalId, file.body, file.contentType);
    return this.commit(principalId, containerId, origin, { ...written, filename, contentType: file.contentType });
  }
}
