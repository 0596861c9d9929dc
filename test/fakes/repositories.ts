import {
  ArchiveRepository,
  ContainerFileRepository,
  ContainerRepository,
  ConverterStatusRepository,
  FileRepository,
  PreviewRepository,
  ReferenceCountError,
  ResponseRepository,
  SessionRepository,
  StoredObjectRepository,
  type ArchiveBuild,
  type ArchiveRow,
  type CompleteBuildOutcome,
  type ContainerFileListing,
  type ContainerFileRow,
  type ContainerRow,
  type ConverterState,
  type FilePurpose,
  type FileRow,
  type NewContainerFile,
  type NewFile,
  type NewResponse,
  type Page,
  type PageQuery,
  type PreviewFailure,
  type PreviewKey,
  type PreviewRow,
  type PreviewSource,
  type ResponseError,
  type ResponseOutput,
  type ResponseRow,
  type SessionRow,
  type StoredObjectRow,
} from '@app/db';
import type { Manifest } from '@app/contracts';
import { type ContainerFileRecord, type FileRecord, Memory, UNBOUND } from './memory';

/** Keyset paging as the SQL does it: by seq, in the asked order, one row more to learn has_more. */
function page<T extends { seq: bigint }>(rows: T[], query: PageQuery): Page<T> {
  const sorted = [...rows].sort((a, b) => (a.seq < b.seq ? -1 : 1));
  if (query.order === 'desc') sorted.reverse();
  const after =
    query.afterSeq === undefined
      ? sorted
      : sorted.filter((row) => (query.order === 'asc' ? row.seq > query.afterSeq! : row.seq < query.afterSeq!));
  return { items: after.slice(0, query.limit), hasMore: after.length > query.limit };
}

const isLiveFile = (file: FileRecord, now = new Date()) => !file.deletedAt && (!file.expiresAt || file.expiresAt > now);

export class MemoryStoredObjects extends StoredObjectRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private get rows() {
    return this.memory.tables.objects;
  }

  override async createUploading(principalId: string, storageKey?: string): Promise<StoredObjectRow> {
    const id = this.memory.uuid();
    const row = {
      id,
      principalId,
      storageKey: storageKey ?? `objects/${id}`,
      status: 'UPLOADING' as const,
      bytes: 0n,
      sha256: null,
      refCount: 0,
    };
    this.rows.set(id, row);
    return { id, principalId, storageKey: row.storageKey, status: row.status, refCount: 0, bytes: 0n, sha256: null };
  }

  override async find(id: string): Promise<StoredObjectRow | null> {
    const row = this.rows.get(id);
    return row
      ? {
          id: row.id,
          principalId: row.principalId,
          storageKey: row.storageKey,
          status: row.status,
          refCount: row.refCount,
          bytes: row.bytes,
          sha256: row.sha256,
        }
      : null;
  }

  override async markReady(principalId: string, id: string, bytes: number, sha256: string | null): Promise<void> {
    const row = this.rows.get(id);
    if (!row || row.principalId !== principalId || row.status !== 'UPLOADING')
      throw new ReferenceCountError(`object ${id} is not an upload in progress`);
    Object.assign(row, { status: 'READY', bytes: BigInt(bytes), sha256, refCount: 1 });
  }

  override async abandon(id: string): Promise<void> {
    const row = this.rows.get(id);
    if (row?.status === 'UPLOADING') row.status = 'PURGING';
  }

  override async retain(principalId: string, id: string): Promise<boolean> {
    const row = this.rows.get(id);
    if (!row || row.principalId !== principalId || row.status !== 'READY') return false;
    row.refCount += 1;
    return true;
  }

  override async release(objectIds: string[]): Promise<string[]> {
    const counts = new Map<string, number>();
    for (const id of objectIds) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const [id, n] of counts) {
      const row = this.rows.get(id);
      if (!row || row.refCount < n) throw new ReferenceCountError(`releasing more references than held: ${id}`);
    }
    const purging: string[] = [];
    for (const [id, n] of counts) {
      const row = this.rows.get(id)!;
      row.refCount -= n;
      if (row.refCount === 0) {
        row.status = 'PURGING';
        purging.push(id);
      }
    }
    return purging;
  }

  override async finishPurge(id: string): Promise<boolean> {
    const row = this.rows.get(id);
    if (!row || row.status !== 'PURGING' || row.refCount !== 0) return false;
    const t = this.memory.tables;
    if (t.files.some((file) => file.objectId === id) || t.containerFiles.some((file) => file.objectId === id))
      row.status = 'PURGED';
    else this.rows.delete(id);
    return true;
  }
}

export class MemoryFiles extends FileRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private toRow(file: FileRecord): FileRow {
    const { principalId: _principal, deletedAt: _deleted, ...row } = file;
    return {
      ...row,
      status: file.sha256 === null ? 'uploaded' : 'processed',
      storageKey: this.memory.tables.objects.get(file.objectId)!.storageKey,
    };
  }

  private live(principalId: string, id: string): FileRecord | undefined {
    return this.memory.tables.files.find(
      (file) => file.id === id && file.principalId === principalId && isLiveFile(file),
    );
  }

  override async create(principalId: string, file: NewFile): Promise<FileRow> {
    const record = { ...file, bytes: BigInt(file.bytes), principalId, seq: this.memory.nextSeq(), deletedAt: null };
    this.memory.tables.files.push(record);
    return this.toRow(record);
  }

  override async findForOwner(principalId: string, id: string): Promise<FileRow | null> {
    const file = this.live(principalId, id);
    return file ? this.toRow(file) : null;
  }

  override async lockLive(principalId: string, id: string): Promise<FileRow | null> {
    return this.findForOwner(principalId, id);
  }

  override async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    return this.memory.tables.files.find((file) => file.id === id && file.principalId === principalId)?.seq ?? null;
  }

  override async listForOwner(
    principalId: string,
    query: PageQuery & { purpose?: FilePurpose },
  ): Promise<Page<FileRow>> {
    const rows = this.memory.tables.files.filter(
      (file) =>
        file.principalId === principalId && isLiveFile(file) && (!query.purpose || file.purpose === query.purpose),
    );
    const result = page(rows, query);
    return { items: result.items.map((file) => this.toRow(file)), hasMore: result.hasMore };
  }

  override async markDeleted(principalId: string, id: string): Promise<string | null> {
    const file = this.live(principalId, id);
    if (!file) return null;
    file.deletedAt = new Date();
    return file.objectId;
  }

  override async expireDue(now: Date, limit: number): Promise<string[]> {
    const due = this.memory.tables.files
      .filter((file) => !file.deletedAt && file.expiresAt && file.expiresAt <= now)
      .sort((a, b) => a.expiresAt!.getTime() - b.expiresAt!.getTime())
      .slice(0, limit);
    for (const file of due) file.deletedAt = now;
    return due.map((file) => file.objectId);
  }
}

export class MemorySessions extends SessionRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private toRow(session: Memory['tables']['sessions'][number]): SessionRow {
    return {
      id: session.id,
      seq: session.seq,
      currentContainerId: session.currentContainerId,
      metadata: session.metadata,
      createdAt: session.createdAt,
    };
  }

  private live(principalId: string, id: string) {
    return this.memory.tables.sessions.find(
      (session) => session.id === id && session.principalId === principalId && !session.deletedAt,
    );
  }

  override async create(
    principalId: string,
    session: { id: string; currentContainerId: string; metadata: object },
  ): Promise<SessionRow> {
    const record = {
      ...session,
      metadata: session.metadata as Record<string, string>,
      principalId,
      seq: this.memory.nextSeq(),
      createdAt: new Date(),
      deletedAt: null,
    };
    this.memory.tables.sessions.push(record);
    return this.toRow(record);
  }

  override async findForOwner(principalId: string, id: string): Promise<SessionRow | null> {
    const session = this.live(principalId, id);
    return session ? this.toRow(session) : null;
  }

  override async lockLive(principalId: string, id: string): Promise<SessionRow | null> {
    return this.findForOwner(principalId, id);
  }

  override async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    return (
      this.memory.tables.sessions.find((session) => session.id === id && session.principalId === principalId)?.seq ??
      null
    );
  }

  override async listForOwner(principalId: string, query: PageQuery): Promise<Page<SessionRow>> {
    const result = page(
      this.memory.tables.sessions.filter((session) => session.principalId === principalId && !session.deletedAt),
      query,
    );
    return { items: result.items.map((session) => this.toRow(session)), hasMore: result.hasMore };
  }

  override async markDeleted(principalId: string, id: string): Promise<boolean> {
    const session = this.live(principalId, id);
    if (!session) return false;
    session.deletedAt = new Date();
    session.currentContainerId = null;
    return true;
  }

  override async setCurrentContainer(principalId: string, id: string, containerId: string): Promise<void> {
    const session = this.live(principalId, id);
    if (session) session.currentContainerId = containerId;
  }
}

export class MemoryContainers extends ContainerRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private toRow(container: Memory['tables']['containers'][number]): ContainerRow {
    return {
      id: container.id,
      seq: container.seq,
      sessionId: container.sessionId,
      name: container.name,
      createdAt: container.createdAt,
    };
  }

  private live(principalId: string, id: string) {
    const container = this.memory.tables.containers.find(
      (row) => row.id === id && row.principalId === principalId && !row.deletedAt,
    );
    const session =
      container && this.memory.tables.sessions.find((row) => row.id === container.sessionId && !row.deletedAt);
    return session ? container : undefined;
  }

  override async create(
    principalId: string,
    container: { id: string; sessionId: string; name: string | null },
  ): Promise<ContainerRow> {
    const record = { ...container, principalId, seq: this.memory.nextSeq(), createdAt: new Date(), deletedAt: null };
    this.memory.tables.containers.push(record);
    return this.toRow(record);
  }

  override async findForOwner(principalId: string, id: string): Promise<ContainerRow | null> {
    const container = this.live(principalId, id);
    return container ? this.toRow(container) : null;
  }

  override async lockLive(principalId: string, id: string): Promise<ContainerRow | null> {
    return this.findForOwner(principalId, id);
  }

  override async cursorSeq(principalId: string, id: string): Promise<bigint | null> {
    return this.memory.tables.containers.find((row) => row.id === id && row.principalId === principalId)?.seq ?? null;
  }

  override async listForOwner(principalId: string, query: PageQuery): Promise<Page<ContainerRow>> {
    const result = page(
      this.memory.tables.containers.filter((row) => row.principalId === principalId && this.live(principalId, row.id)),
      query,
    );
    return { items: result.items.map((row) => this.toRow(row)), hasMore: result.hasMore };
  }

  override async markDeleted(principalId: string, id: string): Promise<boolean> {
    const container = this.memory.tables.containers.find(
      (row) => row.id === id && row.principalId === principalId && !row.deletedAt,
    );
    if (!container) return false;
    container.deletedAt = new Date();
    return true;
  }

  override async markDeletedInSession(principalId: string, sessionId: string): Promise<void> {
    for (const row of this.memory.tables.containers)
      if (row.sessionId === sessionId && row.principalId === principalId && !row.deletedAt) row.deletedAt = new Date();
  }
}

export class MemoryContainerFiles extends ContainerFileRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private toRow(file: ContainerFileRecord): ContainerFileRow {
    const { principalId: _principal, deletedAt: _deleted, ...row } = file;
    return { ...row, storageKey: this.memory.tables.objects.get(file.objectId)!.storageKey };
  }

  private toListing(file: ContainerFileRecord): ContainerFileListing {
    const { storageKey: _key, ...listing } = this.toRow(file);
    return listing;
  }

  private reachable(file: ContainerFileRecord): boolean {
    const t = this.memory.tables;
    return (
      !file.deletedAt &&
      !!t.containers.find((row) => row.id === file.containerId && !row.deletedAt) &&
      !!t.sessions.find((row) => row.id === file.sessionId && !row.deletedAt)
    );
  }

  private listed(principalId: string, where: (file: ContainerFileRecord) => boolean) {
    return this.memory.tables.containerFiles.filter(
      (file) => file.principalId === principalId && !file.deletedAt && where(file),
    );
  }

  override async create(principalId: string, file: NewContainerFile): Promise<ContainerFileRow> {
    const record = { ...file, bytes: BigInt(file.bytes), principalId, seq: this.memory.nextSeq(), deletedAt: null };
    this.memory.tables.containerFiles.push(record);
    return this.toRow(record);
  }

  override async findForOwner(principalId: string, containerId: string, id: string): Promise<ContainerFileRow | null> {
    const file = this.memory.tables.containerFiles.find(
      (row) => row.id === id && row.containerId === containerId && row.principalId === principalId,
    );
    return file && this.reachable(file) ? this.toRow(file) : null;
  }

  override async filenamesInContainer(
    principalId: string,
    containerId: string,
    ids: string[],
  ): Promise<Map<string, string>> {
    const rows = this.memory.tables.containerFiles.filter(
      (row) =>
        ids.includes(row.id) &&
        row.containerId === containerId &&
        row.principalId === principalId &&
        this.reachable(row),
    );
    return new Map(rows.map((row) => [row.id, row.filename]));
  }

  override async cursorSeq(
    principalId: string,
    scope: { containerId: string } | { sessionId: string },
    id: string,
  ): Promise<bigint | null> {
    const row = this.memory.tables.containerFiles.find(
      (file) =>
        file.id === id &&
        file.principalId === principalId &&
        ('containerId' in scope ? file.containerId === scope.containerId : file.sessionId === scope.sessionId),
    );
    return row?.seq ?? null;
  }

  override async listForContainer(
    principalId: string,
    containerId: string,
    query: PageQuery,
  ): Promise<Page<ContainerFileListing>> {
    const result = page(
      this.listed(principalId, (file) => file.containerId === containerId),
      query,
    );
    return { items: result.items.map((file) => this.toListing(file)), hasMore: result.hasMore };
  }

  override async listSessionArtifacts(
    principalId: string,
    sessionId: string,
    afterSeq: bigint | undefined,
    limit: number,
  ): Promise<Page<ContainerFileListing>> {
    const result = page(
      this.listed(principalId, (file) => file.sessionId === sessionId),
      { order: 'asc', limit, afterSeq },
    );
    return { items: result.items.map((file) => this.toListing(file)), hasMore: result.hasMore };
  }

  override async listSessionArtifactObjects(
    principalId: string,
    sessionId: string,
    afterSeq: bigint | undefined,
    limit: number,
  ): Promise<Page<ContainerFileRow>> {
    const result = page(
      this.listed(principalId, (file) => file.sessionId === sessionId),
      { order: 'asc', limit, afterSeq },
    );
    return { items: result.items.map((file) => this.toRow(file)), hasMore: result.hasMore };
  }

  override async markDeleted(principalId: string, containerId: string, id: string): Promise<string | null> {
    const file = this.memory.tables.containerFiles.find(
      (row) => row.id === id && row.containerId === containerId && row.principalId === principalId && !row.deletedAt,
    );
    const container = file && this.memory.tables.containers.find((row) => row.id === containerId && !row.deletedAt);
    if (!file || !container) return null;
    file.deletedAt = new Date();
    return file.objectId;
  }

  override async markDeletedInContainer(principalId: string, containerId: string): Promise<string[]> {
    return this.deleteWhere((file) => file.principalId === principalId && file.containerId === containerId);
  }

  override async markDeletedInSession(principalId: string, sessionId: string): Promise<string[]> {
    return this.deleteWhere((file) => file.principalId === principalId && file.sessionId === sessionId);
  }

  private deleteWhere(where: (file: ContainerFileRecord) => boolean): string[] {
    const rows = this.memory.tables.containerFiles.filter((file) => !file.deletedAt && where(file));
    for (const row of rows) row.deletedAt = new Date();
    return rows.map((row) => row.objectId);
  }
}

export class MemoryResponses extends ResponseRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private toRow(row: Memory['tables']['responses'][number]): ResponseRow {
    const { seq: _seq, principalId: _principal, taskTokenHash: _token, deadlineAt: _deadline, ...response } = row;
    return response;
  }

  override async create(principalId: string, response: NewResponse): Promise<ResponseRow> {
    const record = {
      ...response,
      metadata: response.metadata as Record<string, string>,
      principalId,
      seq: this.memory.nextSeq(),
      status: 'in_progress' as const,
      output: null,
      error: null,
      completedAt: null,
    };
    this.memory.tables.responses.push(record);
    return this.toRow(record);
  }

  override async findForOwner(principalId: string, id: string): Promise<ResponseRow | null> {
    const row = this.memory.tables.responses.find(
      (response) => response.id === id && response.principalId === principalId,
    );
    const session =
      row && this.memory.tables.sessions.find((session) => session.id === row.sessionId && !session.deletedAt);
    return row && session ? this.toRow(row) : null;
  }

  override async finish(
    principalId: string,
    id: string,
    result: { status: 'completed'; output: ResponseOutput } | { status: 'failed'; error: ResponseError },
  ): Promise<ResponseRow | null> {
    const row = this.memory.tables.responses.find(
      (response) => response.id === id && response.principalId === principalId && response.status === 'in_progress',
    );
    if (!row) return null;
    Object.assign(
      row,
      result.status === 'completed'
        ? { status: 'completed', output: result.output }
        : { status: 'failed', error: result.error },
      { taskTokenHash: null, completedAt: new Date() },
    );
    return this.findForOwner(principalId, id);
  }
}

export class MemoryPreviews extends PreviewRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private toRow(row: Memory['tables']['previews'][number]): PreviewRow {
    const { principalId: _principal, ...preview } = row;
    return {
      ...preview,
      storageKey: row.objectId ? (this.memory.tables.objects.get(row.objectId)?.storageKey ?? null) : null,
    };
  }

  override async findOrCreate(principalId: string, key: PreviewKey, source: PreviewSource): Promise<PreviewRow> {
    const t = this.memory.tables;
    let row = t.previews.find(
      (preview) =>
        preview.principalId === principalId &&
        preview.sha256 === key.sha256 &&
        preview.format === key.format &&
        preview.version === key.version,
    );
    if (!row) {
      row = {
        id: this.memory.uuid(),
        principalId,
        ...key,
        status: 'PENDING',
        generation: 0,
        sourceObjectId: source.objectId,
        sourceFilename: source.filename,
        sourceContentType: source.contentType,
        objectId: null,
        bytes: null,
        pdfSha256: null,
        converter: null,
        errorCode: null,
        errorMessage: null,
        permanent: false,
      };
      t.previews.push(row);
    }
    return this.toRow(row);
  }

  override async find(principalId: string, key: PreviewKey): Promise<PreviewRow | null> {
    const row = this.memory.tables.previews.find(
      (preview) =>
        preview.principalId === principalId &&
        preview.sha256 === key.sha256 &&
        preview.format === key.format &&
        preview.version === key.version,
    );
    return row ? this.toRow(row) : null;
  }

  override async countPending(principalId: string): Promise<number> {
    return this.memory.tables.previews.filter(
      (preview) => preview.principalId === principalId && preview.status === 'PENDING',
    ).length;
  }

  override async findForOwner(principalId: string, id: string): Promise<PreviewRow | null> {
    const row = this.memory.tables.previews.find((preview) => preview.id === id && preview.principalId === principalId);
    return row ? this.toRow(row) : null;
  }

  override async retry(
    principalId: string,
    id: string,
    fromGeneration: number,
    source: PreviewSource,
  ): Promise<PreviewRow | null> {
    const row = this.memory.tables.previews.find((preview) => preview.id === id && preview.principalId === principalId);
    if (row && row.status === 'FAILED' && !row.permanent && row.generation === fromGeneration) {
      Object.assign(row, {
        status: 'PENDING',
        generation: row.generation + 1,
        sourceObjectId: source.objectId,
        sourceFilename: source.filename,
        sourceContentType: source.contentType,
        errorCode: null,
        errorMessage: null,
      });
    }
    return this.findForOwner(principalId, id);
  }

  override async markReady(
    id: string,
    generation: number,
    pdf: { objectId: string; bytes: number; sha256: string; converter: string },
  ): Promise<boolean> {
    const row = this.memory.tables.previews.find(
      (preview) => preview.id === id && preview.status === 'PENDING' && preview.generation === generation,
    );
    if (!row) return false;
    Object.assign(row, {
      status: 'READY',
      objectId: pdf.objectId,
      bytes: BigInt(pdf.bytes),
      pdfSha256: pdf.sha256,
      converter: pdf.converter,
      errorCode: null,
      errorMessage: null,
    });
    return true;
  }

  override async dropLost(principalId: string, id: string, objectId: string): Promise<string[]> {
    const t = this.memory.tables;
    const before = t.previews.length;
    t.previews = t.previews.filter(
      (preview) =>
        !(
          preview.id === id &&
          preview.principalId === principalId &&
          preview.status === 'READY' &&
          preview.objectId === objectId
        ),
    );
    return t.previews.length < before ? [objectId] : [];
  }

  override async markFailed(id: string, generation: number, failure: PreviewFailure): Promise<void> {
    const row = this.memory.tables.previews.find(
      (preview) => preview.id === id && preview.status === 'PENDING' && preview.generation === generation,
    );
    if (row)
      Object.assign(row, {
        status: 'FAILED',
        errorCode: failure.code,
        errorMessage: failure.message.slice(0, 1000),
        permanent: failure.permanent,
      });
  }
}

export class MemoryConverterStatus extends ConverterStatusRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND as never);
  }

  override async save(states: ConverterState[], now = new Date()): Promise<void> {
    for (const state of states)
      this.memory.tables.converters.set(state.name, {
        available: state.available,
        reason: state.reason,
        checkedAt: now,
      });
  }

  override async available(maxAgeMs: number, now = new Date()): Promise<Set<string>> {
    return new Set(
      [...this.memory.tables.converters]
        .filter(([, state]) => state.available && now.getTime() - state.checkedAt.getTime() < maxAgeMs)
        .map(([name]) => name),
    );
  }
}

export class MemoryArchives extends ArchiveRepository {
  constructor(private readonly memory: Memory) {
    super(UNBOUND);
  }

  private toRow(row: Memory['tables']['archives'][number]): ArchiveRow {
    const object = row.objectId ? this.memory.tables.objects.get(row.objectId) : undefined;
    const { principalId: _principal, objectId: _object, ...archive } = row;
    return {
      ...archive,
      object: object ? { storageKey: object.storageKey, bytes: object.bytes, sha256: object.sha256 } : null,
    };
  }

  private sessionLive(sessionId: string) {
    return this.memory.tables.sessions.some((session) => session.id === sessionId && !session.deletedAt);
  }

  override async findForManifest(
    principalId: string,
    sessionId: string,
    manifestHash: string,
  ): Promise<ArchiveRow | null> {
    const row = this.memory.tables.archives.find(
      (archive) =>
        archive.principalId === principalId && archive.sessionId === sessionId && archive.manifestHash === manifestHash,
    );
    return row && this.sessionLive(sessionId) ? this.toRow(row) : null;
  }

  override async requestBuild(principalId: string, sessionId: string, manifest: Manifest): Promise<ArchiveRow | null> {
    const session = this.memory.tables.sessions.find(
      (row) => row.id === sessionId && row.principalId === principalId && !row.deletedAt,
    );
    if (!session) return null;
    const existing = this.memory.tables.archives.find(
      (archive) => archive.sessionId === sessionId && archive.manifestHash === manifest.hash,
    );
    const now = new Date();
    if (!existing) {
      this.memory.tables.archives.push({
        id: this.memory.uuid(),
        principalId,
        sessionId,
        manifestHash: manifest.hash,
        status: 'pending',
        filesTotal: manifest.filesTotal,
        bytesTotal: manifest.bytesTotal,
        filesDone: 0,
        bytesDone: 0n,
        objectId: null,
        error: null,
        createdAt: now,
        updatedAt: now,
      });
    } else if (existing.status === 'failed') {
      Object.assign(existing, { status: 'pending', error: null, filesDone: 0, bytesDone: 0n, updatedAt: now });
    }
    return this.findForManifest(principalId, sessionId, manifest.hash);
  }

  override async countBuilding(principalId: string): Promise<number> {
    return this.memory.tables.archives.filter(
      (archive) =>
        archive.principalId === principalId &&
        (archive.status === 'pending' || archive.status === 'building') &&
        this.sessionLive(archive.sessionId),
    ).length;
  }

  override async findForBuild(id: string): Promise<ArchiveBuild | null> {
    const row = this.memory.tables.archives.find((archive) => archive.id === id);
    if (!row) return null;
    const { id: archiveId, principalId, sessionId, manifestHash, status, filesTotal, bytesTotal } = row;
    return {
      id: archiveId,
      principalId,
      sessionId,
      manifestHash,
      status,
      filesTotal,
      bytesTotal,
      sessionLive: this.sessionLive(sessionId),
    };
  }

  override async claimForBuild(principalId: string, id: string): Promise<boolean> {
    const row = this.memory.tables.archives.find(
      (archive) => archive.id === id && archive.principalId === principalId && archive.status !== 'ready',
    );
    if (!row) return false;
    Object.assign(row, { status: 'building', filesDone: 0, bytesDone: 0n, error: null, updatedAt: new Date() });
    return true;
  }

  override async reportProgress(
    principalId: string,
    id: string,
    filesDone: number,
    bytesDone: number,
  ): Promise<boolean> {
    const row = this.memory.tables.archives.find(
      (archive) => archive.id === id && archive.principalId === principalId && archive.status === 'building',
    );
    if (row) Object.assign(row, { filesDone, bytesDone: BigInt(bytesDone), updatedAt: new Date() });
    return row !== undefined;
  }

  override async completeBuild(
    principalId: string,
    id: string,
    objectId: string,
    progress: { filesDone: number; bytesDone: number },
  ): Promise<CompleteBuildOutcome> {
    const t = this.memory.tables;
    const mine = t.archives.find(
      (archive) => archive.id === id && archive.principalId === principalId && archive.status === 'building',
    );
    if (!mine) return { outcome: 'superseded', released: [] };
    Object.assign(mine, {
      status: 'ready',
      objectId,
      filesDone: progress.filesDone,
      bytesDone: BigInt(progress.bytesDone),
      error: null,
      updatedAt: new Date(),
    });
    const stale = t.archives.filter(
      (archive) => archive.sessionId === mine.sessionId && archive.id !== id && archive.createdAt <= mine.createdAt,
    );
    t.archives = t.archives.filter((archive) => !stale.includes(archive));
    return { outcome: 'ready', released: stale.flatMap((archive) => (archive.objectId ? [archive.objectId] : [])) };
  }

  override async markFailed(principalId: string, id: string, error: string): Promise<void> {
    const row = this.memory.tables.archives.find(
      (archive) =>
        archive.id === id &&
        archive.principalId === principalId &&
        (archive.status === 'pending' || archive.status === 'building'),
    );
    if (row) Object.assign(row, { status: 'failed', error: error.slice(0, 1000), updatedAt: new Date() });
  }

  override async dropLost(principalId: string, id: string): Promise<string[]> {
    const gone = this.memory.tables.archives.filter(
      (archive) => archive.id === id && archive.principalId === principalId && archive.status === 'ready',
    );
    this.memory.tables.archives = this.memory.tables.archives.filter((archive) => !gone.includes(archive));
    return gone.flatMap((archive) => (archive.objectId ? [archive.objectId] : []));
  }

  override async removeUnbuilt(principalId: string, id: string): Promise<void> {
    this.memory.tables.archives = this.memory.tables.archives.filter(
      (archive) => !(archive.id === id && archive.principalId === principalId && !archive.objectId),
    );
  }

  override async deleteForSession(principalId: string, sessionId: string): Promise<string[]> {
    const gone = this.memory.tables.archives.filter(
      (archive) => archive.sessionId === sessionId && archive.principalId === principalId,
    );
    this.memory.tables.archives = this.memory.tables.archives.filter((archive) => !gone.includes(archive));
    return gone.flatMap((archive) => (archive.objectId ? [archive.objectId] : []));
  }
}
