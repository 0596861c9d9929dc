import { Prisma, type FilePurpose } from '../generated/client';
import type { Db } from '../prisma.service';
import { type Page, type PageQuery, seqCondition, toPage } from './paging';

export interface FileRow {
  id: string;
  seq: bigint;
  objectId: string;
  filename: string;
  bytes: bigint;
  contentType: string;
  /** Null while `status` is "uploaded": the worker has not hashed the file yet. */
  sha256: string | null;
  status: FileStatus;
  purpose: FilePurpose;
  createdAt: Date;
  expiresAt: Date | null;
  storageKey: string;
}

/** "uploaded": composed from an upload's parts, not hashed yet (downloads work); "processed": hashed. */
export type FileStatus = 'uploaded' | 'processed';

const FILE_SELECT = {
  id: true,
  seq: true,
  objectId: true,
  filename: true,
  bytes: true,
  contentType: true,
  sha256: true,
  status: true,
  purpose: true,
  createdAt: true,
  expiresAt: true,
  object: { select: { storageKey: true } },
} as const;

type Selected = Prisma.FileGetPayload<{ select: typeof FILE_SELECT }>;
const toRow = ({ object, ...file }: Selected): FileRow => ({
  ...file,
  status: file.status === 'uploaded' ? 'uploaded' : 'processed',
  storageKey: object.storageKey,
});

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
  /** Null for a file completed from blocks: it is "uploaded" until markHashed. */
  sha256: string | null;
  purpose: FilePurpose;
  createdAt: Date;
  expiresAt: Date | null;
}

/** Uploaded files (`/v1/files`). Every query takes the owning principal. */
export class FileRepository {
  constructor(private readonly db: Db) {}

  async create(principalId: string, file: NewFile): Promise<FileRow> {
    return toRow(
      await this.db.file.create({
        data: {
          ...file,
          status: file.sha256 === null ? 'uploaded' : 'processed',
          bytes: BigInt(file.bytes),
          principalId,
        },
        select: FILE_SELECT,
      }),
    );
  }

  async findForOwner(principalId: string, id: string): Promise<FileRow | null> {
    const file = await this.db.file.findFirst({ where: { id, principalId, ...live() }, select: FILE_SELECT });
    return file ? toRow(file) : null;
  }

  /**
   * The live file, its row locked against a concurrent delete until the transaction ends (a copy of it
   * then lands before the delete, or the delete first and the copy finds nothing).
   */
  async lockLive(principalId: string, id: string): Promise<FileRow | null> {
    const locked = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT id FROM files
       WHERE id = ${id} AND principal_id = ${principalId}::uuid
         AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())
         FOR SHARE`);
    return locked.length === 1 ? this.findForOwner(principalId, id) : null;
  }

  /** seq of a cursor id of this principal (deleted files still anchor a page); null when unknown. */
  async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    const row = await this.db.file.findFirst({ where: { id, principalId }, select: { seq: true } });
    return row?.seq ?? null;
  }

  async listForOwner(principalId: string, query: PageQuery & { purpose?: FilePurpose }): Promise<Page<FileRow>> {
    const rows = await this.db.file.findMany({
      where: { principalId, ...live(), ...(query.purpose ? { purpose: query.purpose } : {}), ...seqCondition(query) },
      orderBy: { seq: query.order },
      take: query.limit + 1,
      select: FILE_SELECT,
    });
    return toPage(rows.map(toRow), query.limit);
  }

  /**
   * Marks the file deleted if it is live, in one conditional statement: of any number of concurrent
   * deletes (or the expiry sweep) exactly one turns the row, and only that one gets the object id to
   * release. Null: it was not live.
   */
  async markDeleted(principalId: string, id: string): Promise<string | null> {
    const rows = await this.db.$queryRaw<{ objectId: string }[]>(Prisma.sql`
      UPDATE files SET deleted_at = now()
       WHERE id = ${id} AND principal_id = ${principalId}::uuid
         AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())
   RETURNING object_id::text AS "objectId"`);
    return rows[0]?.objectId ?? null;
  }

  /**
   * Marks up to `limit` expired files deleted and returns their object ids (each file once, however many sweeps run).
   */
  async expireDue(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ objectId: string }[]>(Prisma.sql`
      UPDATE files SET deleted_at = ${now}
       WHERE deleted_at IS NULL
         AND id IN (SELECT id FROM files WHERE deleted_at IS NULL AND expires_at <= ${now}
                     ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
   RETURNING object_id::text AS "objectId"`);
    return rows.map((row) => row.objectId);
  }
}
