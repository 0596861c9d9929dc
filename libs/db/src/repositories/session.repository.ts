import type { Prisma } from '../generated/client';
import type { PrismaService, Tx } from '../prisma.service';
import { ArchiveRepository } from './archive.repository';
import { type Page, type PageQuery, seqCondition, toPage } from './paging';

export interface SessionRow {
  id: string;
  seq: bigint;
  currentContainerId: string | null;
  metadata: Prisma.JsonValue;
  createdAt: Date;
}

export interface ContainerRow {
  id: string;
  seq: bigint;
  sessionId: string;
  name: string | null;
  createdAt: Date;
}

const SESSION_SELECT = { id: true, seq: true, currentContainerId: true, metadata: true, createdAt: true } as const;
const CONTAINER_SELECT = { id: true, seq: true, sessionId: true, name: true, createdAt: true } as const;

/** Sessions and their containers. Every query takes the owning principal. */
export class SessionRepository {
  private readonly archives: ArchiveRepository;

  constructor(private readonly prisma: PrismaService) {
    this.archives = new ArchiveRepository(prisma);
  }

  /** Creates a session with its first (current) container. */
  async create(tx: Tx, principalId: string, ids: { sessionId: string; containerId: string }, metadata: Prisma.InputJsonObject, containerName: string | null): Promise<{ session: SessionRow; container: ContainerRow }> {
    await tx.session.create({ data: { id: ids.sessionId, principalId, metadata }, select: { id: true } });
    const container = await tx.container.create({ data: { id: ids.containerId, principalId, sessionId: ids.sessionId, name: containerName }, select: CONTAINER_SELECT });
    const session = await tx.session.update({ where: { id: ids.sessionId }, data: { currentContainerId: container.id }, select: SESSION_SELECT });
    return { session, container };
  }

  async findForOwner(principalId: string, id: string, tx: Tx | PrismaService = this.prisma): Promise<SessionRow | null> {
    return tx.session.findFirst({ where: { id, principalId, deletedAt: null }, select: SESSION_SELECT });
  }

  async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    return (await this.prisma.session.findFirst({ where: { id, principalId }, select: { seq: true } }))?.seq ?? null;
  }

  async listForOwner(principalId: string, query: PageQuery): Promise<Page<SessionRow>> {
    const rows = await this.prisma.session.findMany({ where: { principalId, deletedAt: null, ...seqCondition(query) }, orderBy: { seq: query.order }, take: query.limit + 1, select: SESSION_SELECT });
    return toPage(rows, query.limit);
  }

  /**
   * Marks the session, its containers and their files deleted and removes its archives; returns the
   * object ids to release (the files' and the archives').
   */
  async markDeleted(tx: Tx, principalId: string, id: string): Promise<string[] | null> {
    const now = new Date();
    const { count } = await tx.session.updateMany({ where: { id, principalId, deletedAt: null }, data: { deletedAt: now, currentContainerId: null } });
    if (count === 0) return null;
    await tx.container.updateMany({ where: { sessionId: id, principalId, deletedAt: null }, data: { deletedAt: now } });
    const fileObjects = await this.deleteFiles(tx, { sessionId: id, principalId, deletedAt: null }, now);
    return [...fileObjects, ...(await this.archives.deleteForSession(tx, principalId, id))];
  }

  async findContainerForOwner(principalId: string, id: string, tx: Tx | PrismaService = this.prisma): Promise<ContainerRow | null> {
    return tx.container.findFirst({ where: { id, principalId, deletedAt: null, session: { deletedAt: null } }, select: CONTAINER_SELECT });
  }

  async containerCursorSeq(principalId: string, id: string): Promise<bigint | null> {
    return (await this.prisma.container.findFirst({ where: { id, principalId }, select: { seq: true } }))?.seq ?? null;
  }

  async listContainersForOwner(principalId: string, query: PageQuery): Promise<Page<ContainerRow>> {
    const rows = await this.prisma.container.findMany({
      where: { principalId, deletedAt: null, session: { deletedAt: null }, ...seqCondition(query) },
      orderBy: { seq: query.order },
      take: query.limit + 1,
      select: CONTAINER_SELECT,
    });
    return toPage(rows, query.limit);
  }

  /**
   * Deletes a container and its files, and the session's archives (they hold those files' bytes). If it
   * was its session's current container the session gets a fresh empty one (`replacementId`) in the same
   * transaction. Returns the object ids to release.
   */
  async markContainerDeleted(tx: Tx, principalId: string, id: string, replacementId: string): Promise<string[] | null> {
    const container = await this.findContainerForOwner(principalId, id, tx);
    if (!container) return null;
    const now = new Date();
    await tx.container.update({ where: { id }, data: { deletedAt: now } });
    const session = await tx.session.findFirst({ where: { id: container.sessionId, principalId }, select: { currentContainerId: true } });
    if (session?.currentContainerId === id) {
      await tx.container.create({ data: { id: replacementId, principalId, sessionId: container.sessionId }, select: { id: true } });
      await tx.session.update({ where: { id: container.sessionId }, data: { currentContainerId: replacementId } });
    }
    const fileObjects = await this.deleteFiles(tx, { containerId: id, principalId, deletedAt: null }, now);
    return [...fileObjects, ...(await this.archives.deleteForSession(tx, principalId, container.sessionId))];
  }

  private async deleteFiles(tx: Tx, where: Prisma.ContainerFileWhereInput, now: Date): Promise<string[]> {
    const files = await tx.containerFile.findMany({ where, select: { objectId: true } });
    if (files.length > 0) await tx.containerFile.updateMany({ where, data: { deletedAt: now } });
    return files.map((file) => file.objectId);
  }
}
