import { type ContainerFileSource, Prisma } from '../generated/client';
import { type Db, poolOf } from '../prisma.service';
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
  /** Null while the file it was copied from is "uploaded" (not hashed yet). */
  sha256: string | null;
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

/** A listed artifact: everything but the storage key, which only downloads need. */
export type ContainerFileListing = Omit<ContainerFileRow, 'storageKey'>;
const { object: _object, ...LIST_SELECT } = SELECT;

type Selected = { object: { storageKey: string } } & ContainerFileListing;
const toRow = ({ object, ...file }: Selected): ContainerFileRow => ({ ...file, storageKey: object.storageKey });

/** A container file that can be reached: it, its container and its session are all live. */
const LIVE = { deletedAt: null, container: { deletedAt: null }, session: { deletedAt: null } } as const;
/**
 * In listings the file's own deleted_at is enough: deleting a container or a session marks its files
 * deleted in the same transaction, and the caller has checked the container or session. This keeps the
 * keyset query on the (…, seq) index without joins, which matters at 100,000 artifacts.
 */
const LISTED = { deletedAt: null } as const;

/** A session's live artifacts after a seq, oldest first; pg returns bigint columns as strings. */
const LISTING_SQL = `
  SELECT id, seq, session_id, container_id, object_id, filename, bytes, content_type, sha256, source, response_id,
         created_at
    FROM container_files
   WHERE session_id = $1 AND principal_id = $2::uuid AND deleted_at IS NULL AND seq > $3
   ORDER BY seq
   LIMIT $4`;

const toListing = (row: unknown[]): ContainerFileListing => ({
  id: row[0] as string,
  seq: BigInt(row[1] as string),
  sessionId: row[2] as string,
  containerId: row[3] as string,
  objectId: row[4] as string,
  filename: row[5] as string,
  bytes: BigInt(row[6] as string),
  contentType: row[7] as string,
  sha256: row[8] as string | null,
  source: row[9] as ContainerFileSource,
  responseId: row[10] as string | null,
  createdAt: row[11] as Date,
});

export interface NewContainerFile {
  id: string;
  sessionId: string;
  containerId: string;
  objectId: string;
  filename: string;
  bytes: number | bigint;
  contentType: string;
  sha256: string | null;
  source: ContainerFileSource;
  responseId: string | null;
  createdAt: Date;
}

/** Container files: the artifacts of sessions. Every query takes the owning principal. */
export class ContainerFileRepository {
  constructor(private readonly db: Db) {}

  async create(principalId: string, file: NewContainerFile): Promise<ContainerFileRow> {
    return toRow(
      await this.db.containerFile.create({ data: { ...file, bytes: BigInt(file.bytes), principalId }, select: SELECT }),
    );
  }

  /** The file only if it is in that container, which is a live container of a live session of the principal. */
  async findForOwner(principalId: string, containerId: string, id: string): Promise<ContainerFileRow | null> {
    const file = await this.db.containerFile.findFirst({
      where: { id, containerId, principalId, ...LIVE },
      select: SELECT,
    });
    return file ? toRow(file) : null;
  }

  /** id → filename of those of `ids` that are live files of that live container of the principal. */
  async filenamesInContainer(principalId: string, containerId: string, ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.containerFile.findMany({
      where: { id: { in: ids }, containerId, principalId, ...LIVE },
      select: { id: true, filename: true },
    });
    return new Map(rows.map((row) => [row.id, row.filename]));
  }

  async cursorSeq(
    principalId: string,
    scope: { containerId: string } | { sessionId: string },
    id: string,
  ): Promise<bigint | null> {
    return (
      (await this.db.containerFile.findFirst({ where: { id, principalId, ...scope }, select: { seq: true } }))?.seq ??
      null
    );
  }

  async listForContainer(
    principalId: string,
    containerId: string,
    query: PageQuery,
  ): Promise<Page<ContainerFileListing>> {
    const rows = await this.db.containerFile.findMany({
      where: { principalId, containerId, ...LISTED, ...seqCondition(query) },
      orderBy: { seq: query.order },
      take: query.limit + 1,
      select: LIST_SELECT,
    });
    return toPage(rows, query.limit);
  }

  /**
   * Every artifact of a session, from every container and response, oldest first, after `afterSeq`.
   * Callers stream it batch by batch (keyset), so memory does not grow with the session.
   */
  async listSessionArtifacts(
    principalId: string,
    sessionId: string,
    afterSeq: bigint | undefined,
    limit: number,
  ): Promise<Page<ContainerFileListing>> {
    // Plain pg on the (session_id, seq) index, rows as arrays: at 100,000 rows the per-row objects of
    // Prisma's raw query were most of the listing's time and its garbage.
    const result = await poolOf(this.db).query<unknown[]>({
      text: LISTING_SQL,
      values: [sessionId, principalId, String(afterSeq ?? -1n), limit + 1],
      rowMode: 'array',
    });
    const rows = result.rows.map(toListing);
    return toPage(rows, limit);
  }

  /**
   * What changes when an artifact is added to or deleted from the session: how many live ones it has, and
   * the newest. A build compares it as it goes and stops early when it moves.
   */
  async sessionVersion(principalId: string, sessionId: string): Promise<string> {
    const rows = await this.db.$queryRaw<{ files: bigint; newest: bigint | null }[]>(Prisma.sql`
      SELECT count(*) AS files, max(seq) AS newest FROM container_files
       WHERE session_id = ${sessionId} AND principal_id = ${principalId}::uuid AND deleted_at IS NULL`);
    return `${rows[0]?.files ?? 0}:${rows[0]?.newest ?? ''}`;
  }

  /**
   * The same artifacts as listSessionArtifacts, in the same order, with what an archive build needs to
   * read each one (its storage key).
   */
  async listSessionArtifactObjects(
    principalId: string,
    sessionId: string,
    afterSeq: bigint | undefined,
    limit: number,
  ): Promise<Page<ContainerFileRow>> {
    const rows = await this.db.containerFile.findMany({
      where: { principalId, sessionId, ...LISTED, ...(afterSeq === undefined ? {} : { seq: { gt: afterSeq } }) },
      orderBy: { seq: 'asc' },
      take: limit + 1,
      select: SELECT,
    });
    return toPage(rows.map(toRow), limit);
  }

  /**
   * Marks one live artifact deleted in one conditional statement: of concurrent deletes (of it, its
   * container or its session) exactly one turns the row, and only that one gets the object id to
   * release. The caller holds its session's lock. Null: it was not reachable.
   */
  async markDeleted(principalId: string, containerId: string, id: string): Promise<string | null> {
    const rows = await this.db.$queryRaw<{ objectId: string }[]>(Prisma.sql`
      UPDATE container_files f SET deleted_at = now()
        FROM containers c
       WHERE f.id = ${id} AND f.container_id = ${containerId} AND f.principal_id = ${principalId}::uuid
         AND f.deleted_at IS NULL
         AND c.id = f.container_id AND c.deleted_at IS NULL
   RETURNING f.object_id::text AS "objectId"`);
    return rows[0]?.objectId ?? null;
  }

  /** With their container: the live artifacts in it turn deleted; returns the object ids of exactly those. */
  async markDeletedInContainer(principalId: string, containerId: string): Promise<string[]> {
    return this.markDeletedWhere(Prisma.sql`container_id = ${containerId} AND principal_id = ${principalId}::uuid`);
  }

  /** With their session: every live artifact of it turns deleted; returns the object ids of exactly those. */
  async markDeletedInSession(principalId: string, sessionId: string): Promise<string[]> {
    return this.markDeletedWhere(Prisma.sql`session_id = ${sessionId} AND principal_id = ${principalId}::uuid`);
  }

  private async markDeletedWhere(scope: Prisma.Sql): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ objectId: string }[]>(Prisma.sql`
      UPDATE container_files SET deleted_at = now()
       WHERE ${scope} AND deleted_at IS NULL
   RETURNING object_id::text AS "objectId"`);
    return rows.map((row) => row.objectId);
  }
}
