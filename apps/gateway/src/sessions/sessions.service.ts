import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '@app/common';
import { isId } from '@app/contracts';
import {
  ContainerFileRepository,
  KeysetBatches,
  SessionRepository,
  type ContainerFileListing,
  type Page,
  type SessionRow,
} from '@app/db';
import { UnitOfWork } from '@app/lifecycle';
import type { ListQuery } from '../http/list-query';
import { createSession } from './new-session';

/** Rows read per round trip while streaming a session listing: memory stays flat at any size. */
const LISTING_BATCH = 500;

/** A session's artifacts: one page when the caller asked for a limit, else all of them as a stream. */
export type SessionListing =
  { kind: 'page'; page: Page<ContainerFileListing> } | { kind: 'all'; batches: KeysetBatches<ContainerFileListing> };

@Injectable()
export class SessionsService {
  constructor(
    @Inject(UnitOfWork) private readonly uow: UnitOfWork,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
  ) {}

  /** A session with its first, current container. */
  async create(principalId: string, metadata: Record<string, string>): Promise<SessionRow> {
    return this.uow.run(async (work) => (await createSession(work, principalId, { metadata })).session);
  }

  async get(principalId: string, id: string): Promise<SessionRow> {
    const session = isId('session', id) ? await this.sessions.findForOwner(principalId, id) : null;
    if (!session) throw ApiError.notFound('session');
    return session;
  }

  async list(principalId: string, query: ListQuery): Promise<Page<SessionRow>> {
    const afterSeq = query.after ? await this.sessions.cursorSeq(principalId, query.after) : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a session in this list.', 'after');
    return this.sessions.listForOwner(principalId, { ...query, afterSeq });
  }

  /**
   * The session, its containers, artifacts and archives become 404 in one unit of work, and exactly the
   * references those rows held are released; the worker purges the bytes no live row still shares.
   */
  async delete(principalId: string, id: string): Promise<void> {
    if (!isId('session', id)) throw ApiError.notFound('session');
    await this.uow.run(async (work) => {
      if (!(await work.sessions.markDeleted(principalId, id))) throw ApiError.notFound('session');
      await work.containers.markDeletedInSession(principalId, id);
      const artifacts = await work.containerFiles.markDeletedInSession(principalId, id);
      const archives = await work.archives.deleteForSession(principalId, id);
      await work.release([...artifacts, ...archives]);
    });
  }

  /**
   * Every artifact of the session, oldest first. With `limit`, one page; without, all of them, read in
   * keyset batches as the consumer asks for more, so 100,000 artifacts cost no more memory than one batch.
   */
  async listing(
    principalId: string,
    sessionId: string,
    paging: { limit?: number; after?: string },
  ): Promise<SessionListing> {
    await this.get(principalId, sessionId);
    let afterSeq: bigint | undefined;
    if (paging.after) {
      const seq = isId('file', paging.after)
        ? await this.containerFiles.cursorSeq(principalId, { sessionId }, paging.after)
        : null;
      if (seq === null) throw ApiError.invalid('after must be the id of an artifact of this session.', 'after');
      afterSeq = seq;
    }
    if (paging.limit !== undefined)
      return {
        kind: 'page',
        page: await this.containerFiles.listSessionArtifacts(principalId, sessionId, afterSeq, paging.limit),
      };
    const first = await this.containerFiles.listSessionArtifacts(principalId, sessionId, afterSeq, LISTING_BATCH);
    return {
      kind: 'all',
      batches: new KeysetBatches(first, (after) =>
        this.containerFiles.listSessionArtifacts(principalId, sessionId, after, LISTING_BATCH),
      ),
    };
  }
}
