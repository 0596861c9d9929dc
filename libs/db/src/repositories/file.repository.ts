import { Prisma, type FilePurpose } from '../generated/client';
import type { PrismaService, Tx } from '../prisma.service';
import { type Page, type PageQuery, seqCondition, toPage } from './paging';

export interface FileRow {
  id: string;
  seq: bigint;
  objectId: string;
  filename: string;
  bytes: bigint;
  contentType: string;
  sha256: string;
  purpose: FilePurpose;
  createdAt: Date;
  expiresAt: Date | null;
  storageKey: string;
}

const FILE_SELECT = {
  id: true,
  seq: true,
  objectId: true,
  filename: true,
  bytes: true,
  contentType: true,
  sha256: true,
  purpose: true,
  createdAt: true,
  expiresAt: true,
  object: { select: { storageKey: true } },
} as const;

type Selected = Prisma.FileGetPayload<{ select: typeof FILE_SELECT }>;
const toRow = ({ object, ...file }: Selected): FileRow => ({ ...file, storageKey: object.storageKey });

/** A file that is live: not deleted and not past its expiry. */
function live(now = new Date()): Prisma.FileWhereInput {
  return { deletedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
}

export interface NewFile {
  id: string;
  objectId: string;
  filename: string;
  bytes: number;
  contentType: string;
  sha256: string;
  purpose: FilePurpose;
  createdAt: Date;
  expiresAt: Date | null;
}

/** Uploaded files (`/v1/files`). Every query takes the owning principal. */
export class FileRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(tx: Tx, principalId: string, file: NewFile): Promise<FileRow> {
    const created = await tx.file.create({ data: { ...file, bytes: BigInt(file.bytes), principalId }, select: FILE_SELECT });
    return toRow(created);
  }

  async findForOwner(principalId: string, id: string, tx: Tx | PrismaService = this.prisma): Promise<FileRow | null> {
    const file = await tx.file.findFirst({ where: { id, principalId, ...live() }, select: FILE_SELECT });
    return file ? toRow(file) : null;
  }

  /** seq of a cursor id of this principal (deleted files still anchor a page); null when unknown. */
  async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    const row = await this.prisma.file.findFirst({ where: { id, principalId }, select: { seq: true } });
    return row?.seq ?? null;
  }

  async listForOwner(principalId: string, query: PageQuery & { purpose?: FilePurpose }): Promise<Page<FileRow>> {
    const rows = await this.prisma.file.findMany({
      where: { principalId, ...live(), ...(query.purpose ? { purpose: query.purpose } : {}), ...seqCondition(query) },
      orderBy: { seq: query.order },
      take: query.limit + 1,
      select: FILE_SELECT,
    });
    return toPage(rows.map(toRow), query.limit);
  }

  /** Marks the file deleted; returns its object id (to release) or null when it was not live. */
  async markDeleted(tx: Tx, principalId: string, id: string): Promise<string | null> {
    const file = await tx.file.findFirst({ where: { id, principalId, ...live() }, select: { objectId: true } });
    if (!file) return null;
    await tx.file.update({ where: { id }, data: { deletedAt: new Date() } });
    return file.objectId;
  }

  /** Marks up to `limit` expired files deleted and returns their object ids. */
  async expireDue(tx: Tx, now: Date, limit: number): Promise<string[]> {
    const rows = await tx.$queryRaw<{ object_id: string }[]>(Prisma.sql`
      UPDATE files SET deleted_at = ${now}
       WHERE id IN (SELECT id FROM files WHERE deleted_at IS NULL AND expires_at <= ${now} ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
   RETURNING object_id::text AS object_id`);
    return rows.map((row) => row.object_id);
  }
}
