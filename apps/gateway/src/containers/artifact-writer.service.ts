import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { APP_CONFIG, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';
import { newId } from '@app/contracts';
import { type ContainerFileRow } from '@app/db';
import { ObjectStager, UnitOfWork, type StagedObject } from '@app/lifecycle';
import type { ArtifactOrigin } from '../auth/task-scope';
import { acceptFilename } from '../uploads/receiver/filename';
import { holdContainerForWrite } from './container-writes';

export interface StagedArtifact {
  staged: StagedObject;
  filename: string;
  contentType: string;
}

/** Puts staged bytes into a container as a container file: the one way an artifact comes to be. */
@Injectable()
export class ArtifactWriter {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
  ) {}

  /**
   * Keeps staged bytes as a file of a live container of the principal, in one unit of work; if the
   * container went away meanwhile (404) or anything fails, the bytes are discarded.
   */
  async commit(
    principalId: string,
    containerId: string,
    origin: ArtifactOrigin,
    artifact: StagedArtifact,
  ): Promise<ContainerFileRow> {
    return this.uow.run(
      async (work) => {
        const container = await holdContainerForWrite(work, principalId, containerId);
        await work.adopt(artifact.staged);
        return work.containerFiles.create(principalId, {
          id: newId('file'),
          sessionId: container.sessionId,
          containerId,
          objectId: artifact.staged.id,
          filename: artifact.filename,
          bytes: artifact.staged.bytes,
          contentType: artifact.contentType,
          sha256: artifact.staged.sha256,
          ...origin,
          createdAt: new Date(),
        });
      },
      { staged: [artifact.staged] },
    );
  }

  /**
   * Streams new bytes into the container (an agent writing an artifact in process). A cut stream cannot
   * resume, so it is held to the single-request limit as an upload would be.
   */
  async write(
    principalId: string,
    containerId: string,
    origin: ArtifactOrigin,
    file: { filename: string; contentType: string; body: Readable },
  ): Promise<ContainerFileRow> {
    let filename: string;
    try {
      filename = acceptFilename(file.filename, 'filename');
    } catch (error) {
      file.body.destroy();
      throw error;
    }
    const staged = await this.stager.stage(principalId, file.body, {
      maxBytes: effectiveLimitsOf(this.config).maxSingleRequestFileBytes,
      contentType: file.contentType,
    });
    return this.commit(principalId, containerId, origin, { staged, filename, contentType: file.contentType });
  }
}
