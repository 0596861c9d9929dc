import { Prisma } from '../generated/client';
import type { Db } from '../prisma.service';
import { type Page, type PageQuery, seqCondition, toPage } from './paging';

export interface ContainerRow {
  id: string;
  seq: bigint;
  sessionId: string;
  name: string | null;
  createdAt: Date;
}

const SELECT = { id: true, seq: true, sessionId: true, name: true, createdAt: true } as const;
/** A container that can be reached: it and its session are live. */
const LIVE = { deletedAt: null, session: { deletedAt: null } } as const;

/** Containers: each belongs to one session. Every query takes the owning principal. */
export class ContainerRepository {
  constructor(private readonly db: Db) {}

  async create(
    principalId: string,
    container: { id: string; sessionId: string; name: string | null },
  ): Promise<ContainerRow> {
    return this.db.container.create({ data: { ...container, principalId }, select: SELECT });
  }

  async findForOwner(principalId: string, id: string): Promise<ContainerRow | null> {
    return this.db.container.findFirst({ where: { id, principalId, ...LIVE }, select: SELECT });
  }

  /**
   * The live container, locked against a concurrent delete until the transaction ends. The caller has
   * locked its session first (SessionRepository.lockLive): sessions before containers, always.
   */
  async lockLive(principalId: string, id: string): Promise<ContainerRow | null> {
    const rows = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT id FROM containers
       WHERE id = ${id} AND principal_id = ${principalId}::uuid AND deleted_at IS NULL
         FOR SHARE`);
    return rows.length === 1 ? this.findForOwner(principalId, id) : null;
  }

  async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    return (await this.db.container.findFirst({ where: { id, principalId }, select: { seq: true } }))?.seq ?? null;
  }

  async listForOwner(principalId: string, query: PageQuery): Promise<Page<ContainerRow>> {
    const rows = await this.db.container.findMany({
      where: { principalId, ...LIVE, ...seqCondition(query) },
      orderBy: { seq: query.order },
      take: query.limit + 1,
      select: SELECT,
    });
    return toPage(rows, query.limit);
  }

  /** Marks a live container deleted in one conditional statement: of concurrent deletes exactly one gets true. */
  async markDeleted(principalId: string, id: string): Promise<boolean> {
    const { count } = await this.db.container.updateMany({
      where: { id, principalId, deletedAt: null },
      data: { deletedAt: new Date() },
    });
    return count === 1;
  }

  /** Every live container of a session goes with it. */
  async markDeletedInSession(principalId: string, sessionId: string): Promise<void> {
    await this.db.container.updateMany({
      where: { sessionId, principalId, deletedAt: null },
      data: { deletedAt: new Date() },
    });
  }
}
