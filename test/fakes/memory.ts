import { randomUUID } from 'node:crypto';
import type { Db, FilePurpose, PreviewStatus, ResponseError, ResponseOutput } from '@app/db';

/**
 * The rows of an in-memory database, for unit tests of the services. The fake repositories
 * (repositories.ts) read and write these tables with the same semantics as the SQL ones: principal
 * scoping, conditional deletes, reference counts (test/contracts holds each fake to the contract its
 * Prisma repository passes). A unit of work snapshots them and restores the snapshot when it rolls back.
 */
export interface ObjectRecord {
  id: string;
  principalId: string;
  storageKey: string;
  status: 'UPLOADING' | 'READY' | 'PURGING' | 'PURGED';
  bytes: bigint;
  sha256: string | null;
  refCount: number;
}

export interface FileRecord {
  id: string;
  seq: bigint;
  principalId: string;
  objectId: string;
  filename: string;
  bytes: bigint;
  contentType: string;
  sha256: string | null;
  purpose: FilePurpose;
  createdAt: Date;
  expiresAt: Date | null;
  deletedAt: Date | null;
}

export interface SessionRecord {
  id: string;
  seq: bigint;
  principalId: string;
  currentContainerId: string | null;
  metadata: Record<string, string>;
  createdAt: Date;
  deletedAt: Date | null;
}

export interface ContainerRecord {
  id: string;
  seq: bigint;
  principalId: string;
  sessionId: string;
  name: string | null;
  createdAt: Date;
  deletedAt: Date | null;
}

export interface ContainerFileRecord {
  id: string;
  seq: bigint;
  principalId: string;
  sessionId: string;
  containerId: string;
  objectId: string;
  filename: string;
  bytes: bigint;
  contentType: string;
  sha256: string | null;
  source: 'user' | 'assistant';
  responseId: string | null;
  createdAt: Date;
  deletedAt: Date | null;
}

export interface ResponseRecord {
  id: string;
  seq: bigint;
  principalId: string;
  sessionId: string;
  containerId: string;
  agent: string;
  status: 'in_progress' | 'completed' | 'failed';
  inputFileIds: string[];
  metadata: Record<string, string>;
  output: ResponseOutput | null;
  error: ResponseError | null;
  taskTokenHash: string | null;
  deadlineAt: Date;
  createdAt: Date;
  completedAt: Date | null;
}

export interface PreviewRecord {
  id: string;
  principalId: string;
  sha256: string;
  format: string;
  version: number;
  status: PreviewStatus;
  generation: number;
  sourceObjectId: string;
  sourceFilename: string;
  sourceContentType: string;
  objectId: string | null;
  bytes: bigint | null;
  pdfSha256: string | null;
  converter: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  permanent: boolean;
}

export interface ArchiveRecord {
  id: string;
  principalId: string;
  sessionId: string;
  manifestHash: string;
  status: 'pending' | 'building' | 'ready' | 'failed';
  filesTotal: number;
  bytesTotal: bigint;
  filesDone: number;
  bytesDone: bigint;
  objectId: string | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface Tables {
  objects: Map<string, ObjectRecord>;
  files: FileRecord[];
  sessions: SessionRecord[];
  containers: ContainerRecord[];
  containerFiles: ContainerFileRecord[];
  responses: ResponseRecord[];
  previews: PreviewRecord[];
  archives: ArchiveRecord[];
  converters: Map<string, { available: boolean; reason: string | null; checkedAt: Date }>;
}

const emptyTables = (): Tables => ({
  objects: new Map(),
  files: [],
  sessions: [],
  containers: [],
  containerFiles: [],
  responses: [],
  previews: [],
  archives: [],
  converters: new Map(),
});

export class Memory {
  tables: Tables = emptyTables();
  private seq = 0n;

  nextSeq(): bigint {
    this.seq += 1n;
    return this.seq;
  }

  uuid(): string {
    return randomUUID();
  }

  snapshot(): Tables {
    return structuredClone(this.tables);
  }

  restore(snapshot: Tables): void {
    this.tables = snapshot;
  }

  /** Every object whose count differs from the live rows that point at it: what a unit test asserts is empty. */
  miscounted(): { id: string; refCount: number; live: number }[] {
    const t = this.tables;
    return [...t.objects.values()]
      .filter((object) => object.status === 'READY' || object.status === 'PURGING')
      .map((object) => ({
        id: object.id,
        refCount: object.refCount,
        live:
          t.files.filter((row) => row.objectId === object.id && !row.deletedAt).length +
          t.containerFiles.filter((row) => row.objectId === object.id && !row.deletedAt).length +
          t.previews.filter((row) => row.objectId === object.id).length +
          t.archives.filter((row) => row.objectId === object.id).length,
      }))
      .filter((object) => object.refCount !== object.live);
  }
}

/** What the fake repositories pass to the real constructors: any use of it is a method nobody faked. */
export const UNBOUND = new Proxy(
  {},
  {
    get(_target, property) {
      throw new Error(`not faked: the database client's ${String(property)}`);
    },
  },
) as Db;
