import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '@app/common';
import { isId, newId } from '@app/contracts';
import { ContainerRepository, type ContainerRow, type Page } from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import type { ListQuery } from '../http/list-query';
import { createSession } from '../sessions/new-session';
import { copyFileInto } from './container-writes';

const MAX_NAME_LENGTH = 256;
const MAX_FILE_IDS = 100;

/** Containers: each belongs to one session; a session has one current container at a time. */
@Injectable()
export class ContainersService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(ContainerRepository) private readonly containers: ContainerRepository,
  ) {}

  async get(principalId: string, id: string): Promise<ContainerRow> {
    const container = isId('container', id) ? await this.containers.findForOwner(principalId, id) : null;
    if (!container) throw ApiError.notFound('container');
    return container;
  }

  async list(principalId: string, query: ListQuery): Promise<Page<ContainerRow>> {
    const afterSeq = query.after ? await this.containers.cursorSeq(principalId, query.after) : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a container in this list.', 'after');
    return this.containers.listForOwner(principalId, { ...query, afterSeq });
  }

  /**
   * POST /v1/containers (the OpenAI SDK's containers.create): a new session, its container, the named files copied in.
   */
  async create(principalId: string, body: Record<string, unknown>): Promise<ContainerRow> {
    const name = body.name;
    if (name !== undefined && name !== null && (typeof name !== 'string' || name.length > MAX_NAME_LENGTH))
      throw ApiError.invalid(`name must be a string of at most ${MAX_NAME_LENGTH} characters.`, 'name');
    if (typeof name === 'string' && name.includes('\u0000'))
      throw ApiError.invalid('name cannot hold U+0000 (Postgres stores no NUL).', 'name');
    const fileIds = body.file_ids ?? [];
    if (!Array.isArray(fileIds) || fileIds.length > MAX_FILE_IDS)
      throw ApiError.invalid(`file_ids must be an array of at most ${MAX_FILE_IDS} file ids.`, 'file_ids');
    return this.uow.run(async (work) => {
      const { container } = await createSession(work, principalId, {
        containerName: typeof name === 'string' ? name : null,
      });
      for (const [index, fileId] of fileIds.entries())
        await copyFileInto(work, principalId, container, fileId, `file_ids[${index}]`);
      return container;
    });
  }

  /**
   * Deletes the container and its files, and the session's archives (they hold those files' bytes).
   * If it was its session's current container, the session gets a fresh empty one in the same unit of
   * work. The session is locked first, as every write under it does.
   */
  async delete(principalId: string, id: string): Promise<void> {
    const container = await this.get(principalId, id);
    await this.uow.run(async (work) => {
      const session = await work.sessions.lockLive(principalId, container.sessionId, 'exclusive');
      if (!session || !(await work.containers.markDeleted(principalId, id))) throw ApiError.notFound('container');
      if (session.currentContainerId === id) {
        const replacement = await work.containers.create(principalId, {
          id: newId('container'),
          sessionId: session.id,
          name: null,
        });
        await work.sessions.setCurrentContainer(principalId, session.id, replacement.id);
      }
      const artifacts = await work.containerFiles.markDeletedInContainer(principalId, id);
      const archives = await work.archives.deleteForSession(principalId, session.id);
      await work.release([...artifacts, ...archives]);
    });
  }
}
