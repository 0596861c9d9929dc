import { Prisma } from '../generated/client';
import type { Db } from '../prisma.service';
import { type Page, type PageQuery, seqCondition, toPage } from './paging';

export interface SessionRow {
  id: string;
  seq: bigint;
  currentContainerId: string | null;
  metadata: Prisma.JsonValue;
  createdAt: Date;
}

const SELECT = { id: true, seq: true, currentContainerId: true, metadata: true, createdAt: true } as const;

/**
 * How a transaction holds a live session until it ends. Every transaction that changes rows under a
 * session takes this lock first, so locks are always taken session → container → file → archive →
 * object, and concurrent deletes, copies and commits cannot deadlock. `share`: adds rows under it
 * (many at once); `exclusive`: removes rows or archives under it (one at a time, and not while rows
 * are being added).
 */
export type SessionLock = 'share' | 'exclusive';

/** Sessions. Every query takes the owning principal. */
export class SessionRepository {
  constructor(private readonly db: Db) {}

  /** The session row; its first container is created next, in the same transaction (ContainerRepository.create). */
  async create(
    principalId: string,
    session: { id: string; currentContainerId: string; metadata: Prisma.InputJsonObject },
  ): Promise<SessionRow> {
    return this.db.session.create({ data: { ...session, principalId }, select: SELECT });
  }

  async findForOwner(principalId: string, id: string): Promise<SessionRow | null> {
    return this.db.session.findFirst({ where: { id, principalId, deletedAt: null }, select: SELECT });
  }

  /** The live session, locked until the transaction ends; null when it is not a live session of the principal. */
  async lockLive(principalId: string, id: string, mode: SessionLock): Promise<SessionRow | null> {
    const lock = mode === 'share' ? Prisma.sql`FOR SHARE` : Prisma.sql`FOR NO KEY UPDATE`;
    const rows = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT id FROM sessions WHERE id = ${id} AND principal_id = ${principalId}::uuid AND deleted_at IS NULL ${lock}`);
    return rows.length === 1 ? this.findForOwner(principalId, id) : null;
  }

  async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    return (await this.db.session.findFirst({ where: { id, principalId }, select: { seq: true } }))?.seq ?? null;
  }

  async listForOwner(principalId: string, query: PageQuery): Promise<Page<SessionRow>> {
    const rows = await this.db.session.findMany({
      where: { principalId, deletedAt: null, ...seqCondition(query) },
      orderBy: { seq: query.order },
      take: query.limit + 1,
      select: SELECT,
    });
    return toPage(rows, query.limit);
  }

  /** Marks a live session deleted, in one conditional statement: of concurrent deletes exactly one gets true. */
  async markDeleted(principalId: string, id: string): Promise<boolean> {
    const { count } = await this.db.session.updateMany({
      where: { id, principalId, deletedAt: null },
      data: { deletedAt: new Date(), currentContainerId: null },
    });
    return count === 1;
  }

  async setCurrentContainer(principalId: string, id: string, containerId: string): Promise<void> {
    await this.db.session.updateMany({
      where: { id, principalId, deletedAt: null },
      data: { currentContainerId: containerId },
    });
  }
}
