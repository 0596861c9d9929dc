import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach } from 'vitest';
import { newId } from '@app/contracts';
import type {
  ArchiveRepository,
  ContainerFileRepository,
  ContainerFileRow,
  ContainerRepository,
  ConverterStatusRepository,
  FileRepository,
  FileRow,
  NewContainerFile,
  NewFile,
  PreviewRepository,
  ResponseRepository,
  SessionRepository,
  StoredObjectRepository,
  StoredObjectRow,
  Transactions,
} from '@app/db';

/** One implementation of every port that has a fake: the Prisma repositories, or the in-memory ones. */
export interface Repositories {
  objects: StoredObjectRepository;
  files: FileRepository;
  sessions: SessionRepository;
  containers: ContainerRepository;
  containerFiles: ContainerFileRepository;
  responses: ResponseRepository;
  previews: PreviewRepository;
  archives: ArchiveRepository;
  converterStatus: ConverterStatusRepository;
  transactions: Transactions;
}

export const SHA = 'ab'.repeat(32);

/**
 * Rows a contract needs around the port it tests, made through the same implementation's other ports.
 * Every principal and id is new, so the rows coexist with any other test's in a shared database.
 */
export class Seeds {
  constructor(private readonly repos: Repositories) {}

  principal(): string {
    return randomUUID();
  }

  async readyObject(principalId: string): Promise<StoredObjectRow> {
    const object = await this.repos.objects.createUploading(principalId);
    await this.repos.objects.markReady(principalId, object.id, 3, SHA);
    return (await this.repos.objects.find(object.id))!;
  }

  async file(principalId: string, extra: Partial<NewFile> = {}): Promise<FileRow> {
    const objectId = extra.objectId ?? (await this.readyObject(principalId)).id;
    return this.repos.files.create(principalId, {
      id: newId('file'),
      objectId,
      filename: 'notes.txt',
      bytes: 3,
      contentType: 'text/plain',
      sha256: SHA,
      purpose: 'user_data',
      createdAt: new Date(),
      expiresAt: null,
      ...extra,
    });
  }

  /** A session with its first container, as SessionsService creates them. */
  async session(principalId: string): Promise<{ sessionId: string; containerId: string }> {
    const ids = { sessionId: newId('session'), containerId: newId('container') };
    await this.repos.sessions.create(principalId, {
      id: ids.sessionId,
      currentContainerId: ids.containerId,
      metadata: {},
    });
    await this.repos.containers.create(principalId, { id: ids.containerId, sessionId: ids.sessionId, name: null });
    return ids;
  }

  async container(principalId: string, sessionId: string, name: string | null = null): Promise<string> {
    const id = newId('container');
    await this.repos.containers.create(principalId, { id, sessionId, name });
    return id;
  }

  async containerFile(
    principalId: string,
    at: { sessionId: string; containerId: string },
    extra: Partial<NewContainerFile> = {},
  ): Promise<ContainerFileRow> {
    const objectId = extra.objectId ?? (await this.readyObject(principalId)).id;
    return this.repos.containerFiles.create(principalId, {
      id: newId('file'),
      sessionId: at.sessionId,
      containerId: at.containerId,
      objectId,
      filename: 'artifact.txt',
      bytes: 3,
      contentType: 'text/plain',
      sha256: SHA,
      source: 'user',
      responseId: null,
      createdAt: new Date(),
      ...extra,
    });
  }
}

/** What a contract runs against: the port, seeds made through the same implementation, and its cleanup. */
export interface ContractSubject<R> {
  repo: R;
  seed: Seeds;
  cleanup(): Promise<void>;
}

export type SubjectFactory<R> = () => Promise<ContractSubject<R>>;

/** A fresh subject for each test of a contract; `current()` is the one of the running test. */
export function eachSubject<R>(subject: SubjectFactory<R>): () => ContractSubject<R> {
  let current: ContractSubject<R> | undefined;
  beforeEach(async () => {
    current = await subject();
  });
  afterEach(async () => {
    await current?.cleanup();
    current = undefined;
  });
  return () => current!;
}
