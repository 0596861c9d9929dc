import { Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { ApiError, LOGGER, PurgeProducer, type AppLogger } from '@app/common';
import { isId, newId } from '@app/contracts';
import { ContainerFileRepository, PrismaService, SessionRepository, StoredObjectRepository, type SessionRow } from '@app/db';
import type { ListQuery } from '../http/list-query';
import { presentContainerFile } from '../http/presenters';

/** Rows read per round trip while streaming a session listing: memory stays flat at any size. */
const LISTING_BATCH = 500;

@Injectable()
export class SessionsService {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(ContainerFileRepository) private readonly containerFiles: ContainerFileRepository,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(PurgeProducer) private readonly purges: PurgeProducer,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async create(principalId: string, metadata: Record<string, string>): Promise<SessionRow> {
    return this.prisma.$transaction(async (tx) => {
      const { session } = await this.sessions.create(tx, principalId, { sessionId: newId('session'), containerId: newId('container') }, metadata, null);
      return session;
    });
  }

  async get(principalId: string, id: string): Promise<SessionRow> {
    const session = isId('session', id) ? await this.sessions.findForOwner(principalId, id) : null;
    if (!session) throw ApiError.notFound('session');
    return session;
  }

  async list(principalId: string, query: ListQuery) {
    const afterSeq = query.after ? await this.sessions.cursorSeq(principalId, query.after) : undefined;
    if (afterSeq === null) throw ApiError.invalid('after must be the id of a session in this list.', 'after');
    return this.sessions.listForOwner(principalId, { ...query, afterSeq });
  }

  /** Session, containers and artifacts become 404 in one transaction; the worker purges the bytes. */
  async delete(principalId: string, id: string): Promise<void> {
    if (!isId('session', id)) throw ApiError.notFound('session');
    const released = await this.prisma.$transaction(async (tx) => {
      const objectIds = await this.sessions.markDeleted(tx, principalId, id);
      if (!objectIds) throw ApiError.notFound('session');
      return this.objects.release(tx, objectIds);
    });
    await this.purges.enqueue(released);
  }

  /**
   * GET /v1/sessions/{sid}/files: every artifact of the session, oldest first. With `limit` it answers
   * one page; without, it streams the whole listing in batches read by keyset, so 100,000 artifacts
   * cost no more memory than 500.
   */
  async writeListing(res: Response, principalId: string, sessionId: string, paging: { limit?: number; after?: string }): Promise<void> {
    await this.get(principalId, sessionId);
    let afterSeq: bigint | undefined;
    if (paging.after) {
      const seq = isId('file', paging.after) ? await this.containerFiles.cursorSeq(principalId, { sessionId }, paging.after) : null;
      if (seq === null) throw ApiError.invalid('after must be the id of an artifact of this session.', 'after');
      afterSeq = seq;
    }
    if (paging.limit !== undefined) {
      const page = await this.containerFiles.listSessionArtifacts(principalId, sessionId, afterSeq, paging.limit);
      res.status(200).json({ object: 'list', files: page.items.map(presentContainerFile), has_more: page.hasMore });
      return;
    }
    let page = await this.containerFiles.listSessionArtifacts(principalId, sessionId, afterSeq, LISTING_BATCH);
    res.status(200);
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    const write = async (text: string) => {
      if (!res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve));
    };
    try {
      await write('{"object":"list","files":[');
      let first = true;
      for (;;) {
        for (const item of page.items) {
          await write(`${first ? '' : ','}${JSON.stringify(presentContainerFile(item))}`);
          first = false;
        }
        if (!page.hasMore || res.destroyed) break;
        page = await this.containerFiles.listSessionArtifacts(principalId, sessionId, page.items.at(-1)!.seq, LISTING_BATCH);
      }
      res.end('],"has_more":false}');
    } catch (error) {
      // The status is out already: cut the body so the client sees an incomplete listing, never a short one.
      this.logger.error({ err: error, sessionId }, 'session listing failed mid-stream');
      res.destroy();
    }
  }
}
