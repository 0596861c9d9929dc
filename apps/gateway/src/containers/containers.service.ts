import { Inject, Injectable } from '@nestjs/common';
import { ApiError, PurgeProducer } from '@app/common';
import { isId, newId } from '@app/contracts';
import { PrismaService, SessionRepository, StoredObjectRepository, type ContainerRow } from '@app/db';
import { FileCopier } from './file-copier.service';
import type { ListQuery } from '../http/list-query';

const MAX_NAME_LENGTH = 256;

/** Containers: each belongs to one session; a session has one current container at a time. */
@Injectable()
export class ContainersService {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(FileCopier) private readonly copier: FileCopier,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
  ) {}

  async get(principalId: string, id: string): Promise<ContainerRow> {
    const container = isId('container', id) ? await this.sessions.findContainerForOwner(principalId, id) : null;
    if (!container) throw ApiError.notFound('container');
    return container;
  }

  async list(principalId: string, query: ListQuery) {
    const afterSeq = query.after ? await this.sessions.containerCursorSeq(principalId, query.after) : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a container in this list.', 'after');
    return this.sessions.listContainersForOwner(principalId, { ...query, afterSeq });
  }

  /** POST /v1/containers (the OpenAI SDK's containers.create): a new session, its container, the named files copied in. */
  async create(principalId: string, body: Record<string, unknown>): Promise<ContainerRow> {
    const name = body.name;
    if (name !== undefined && name !== null && (typeof name !== 'string' || name.length > MAX_NAME_LENGTH)) throw ApiError.invalid(`name must be a string of at most ${MAX_NAME_LENGTH} characters.`, 'name');
    const fileIds = body.file_ids ?? [];
    if (!Array.isArray(fileIds) || fileIds.length > 100) throw ApiError.invalid('file_ids must be an array of at most 100 file ids.', 'file_ids');
    return this.prisma.$transaction(async (tx) => {
      const { container } = await this.sessions.create(tx, principalId, { sessionId: newId('session'), containerId: newId('container') }, {}, typeof name === 'string' ? name : null);
      for (const [index, fileId] of fileIds.entries()) await this.copier.copyInto(tx, principalId, container, fileId, `file_ids[${index}]`);
      return container;
    });
  }

  /** Deletes the container and its files; its session gets a fresh current container if needed. */
  async delete(principalId: string, id: string): Promise<void> {
    if (!isId('container', id)) throw ApiError.notFound('container');
    const released = await this.prisma.$transaction(async (tx) => {
      const objectIds = await this.sessions.markContainerDeleted(tx, principalId, id, newId('container'));
      if (!objectIds) throw ApiError.notFound('container');
      return this.objects.release(tx, objectIds);
    });
    await this.purges.enqueue(released);
  }
}
