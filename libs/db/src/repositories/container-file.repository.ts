import type { ContainerFileSource } from '../generated/client';
import type { PrismaService, Tx } from '../prisma.service';
import { type Page, type PageQuery, seqCondition, toPage } from './paging';

export interface ContainerFileRow {
  id: string;
  seq: bigint;
  sessionId: string;
  containerId: string;
  objectId: string;
  filename: string;
  bytes: bigint;
  contentType: string;
  sha256: string;
  source: ContainerFileSource;
  responseId: string | null;
  createdAt: Date;
  storageKey: string;
}

const SELECT = {
  id: true,
  seq: true,
  sessionId: true,
  containerId: true,
  objectId: true,
  filename: true,
  bytes: true,
  contentType: true,
  sha256: true,
  source: true,
  responseId: true,
  createdAt: true,
  object: { select: { storageKey: true } },
} as const;

type Selected = { object: { storageKey: string } } & Omit<ContainerFileRow, 'storageKey'>;
const toRow = ({ object, ...file }: Selected): ContainerFileRow => ({ ...file, storageKey: object.storageKey });

/** A container file that can be reached: it, its container and its session are all live. */
const LIVE = { deletedAt: null, container: { deletedAt: null }, session: { deletedAt: null } } as const;

export interface NewContainerFile {
  id: string;
  sessionId: string;
  containerId: string;
  objectId: string;
  filename: string;
  bytes: number | bigint;
  contentType: string;
  sha256: string;
  source: ContainerFileSource;
  responseId: string | null;
  createdAt: Date;
}

/** Container files: the artifacts of sessions. Every query takes the owning principal. */
export class ContainerFileRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(tx: Tx, principalId: string, file: NewContainerFile): Promise<ContainerFileRow> {
    return toRow(await tx.containerFile.create({ data: { ...file, bytes: BigInt(file.bytes), principalId }, select: SELECT }));
  }

  /** The file only if it is in that container, which is a live container of a live session of the principal. */
  async findForOwner(principalId: string, containerId: string, id: string): Promise<ContainerFileRow | null> {
    const file = await this.prisma.containerFile.findFirst({ where: { id, containerId, principalId, ...LIVE }, select: SELECT });
    return file ? toRow(file) : null;
  }

  async cursorSeq(principalId: string, scope: { containerId: string } | { sessionId: string }, id: string): Promise<bigint | null> {
    return (await this.prisma.containerFile.findFirst({ where: { id, principalId, ...scope }, select: { seq: true } }))?.seq ?? null;
  }

  async listForContainer(principalId: string, containerId: string, query: PageQuery): Promise<Page<ContainerFileRow>> {
    const rows = await this.prisma.containerFile.findMany({ where: { principalId, containerId, ...LIVE, ...seqCondition(query) }, orderBy: { seq: query.order }, take: query.limit + 1, select: SELECT });
    return toPage(rows.map(toRow), query.limit);
  }

  /**
   * Every artifact of a session, from every container and response, oldest first, after `afterSeq`.
   * Callers stream it batch by batch (keyset), so memory does not grow with the session.
   */
  async listSessionArtifacts(principalId: string, sessionId: string, afterSeq: bigint | undefined, limit: number): Promise<Page<ContainerFileRow>> {
    const rows = await this.prisma.containerFile.findMany({
      where: { principalId, sessionId, ...LIVE, ...(afterSeq === undefined ? {} : { seq: { gt: afterSeq } }) },
      orderBy: { seq: 'asc' },
      take: limit + 1,
      select: SELECT,
    });
    return toPage(rows.map(toRow), limit);
  }

  /** Marks one artifact deleted; returns its object id (to release) or null when it was not reachable. */
  async markDeleted(tx: Tx, principalId: string, containerId: string, id: string): Promise<string | null> {
    const file = await tx.containerFile.findFirst({ where: { id, containerId, principalId, ...LIVE }, select: { objectId: true } });
    if (!file) return null;
    await tx.containerFile.update({ where: { id }, data: { deletedAt: new Date() } });
    return file.objectId;
  }
}
