import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import pino from 'pino';
import { ApiError, ObjectStore, type ByteRange, type ObjectRead, type PutOptions } from '@app/common';
import { JobBus, type QueueDepth } from '@app/queue';
import {
  type CompletedBlocksReceipt,
  type ComposedObjectReceipt,
  type ComposeSource,
  type HashedObjectReceipt,
  type JobName,
  type JobPayloads,
  MIN_BLOCK_BYTES,
  type StoredObjectReceipt,
} from '@app/contracts';
import { Transactions, UploadRepository, type TransactionRepositories } from '@app/db';
import { ObjectStager, TransactionalUnitOfWork } from '@app/lifecycle';
import { Memory, UNBOUND } from './memory';
import {
  MemoryArchives,
  MemoryContainerFiles,
  MemoryContainers,
  MemoryConverterStatus,
  MemoryFiles,
  MemoryPreviews,
  MemoryResponses,
  MemorySessions,
  MemoryStoredObjects,
} from './repositories';

export const silentLogger = pino({ level: 'silent' });

/** Object bytes in a map: the store's contract (cap, hash, ranges, abort) without a server. */
export class InMemoryObjectStore extends ObjectStore {
  readonly objects = new Map<string, Buffer>();
  /** Open multipart uploads: upload id → key and its blocks' bytes. */
  readonly multiparts = new Map<string, { key: string; blocks: Map<number, Buffer> }>();
  private nextUploadId = 0;

  async compose(key: string, sources: ComposeSource[]): Promise<ComposedObjectReceipt> {
    const parts = sources.map((source) =>
      typeof source === 'string'
        ? this.objects.get(source)
        : this.objects.get(source.key)?.subarray(source.start, source.end + 1),
    );
    if (parts.some((part) => !part)) throw new ApiError('not_found', 'No such object.');
    const joined = Buffer.concat(parts as Buffer[]);
    this.objects.set(key, joined);
    const { md5, ...rest } = await this.hash(key);
    return { ...rest, md5: md5! };
  }

  async hash(key: string, options: { md5?: boolean } = {}): Promise<HashedObjectReceipt> {
    const bytes = this.objects.get(key);
    if (!bytes) throw ApiError.notFound('object');
    const hash = (name: string) => createHash(name).update(bytes).digest('hex');
    return { key, bytes: bytes.length, sha256: hash('sha256'), md5: options.md5 === false ? null : hash('md5') };
  }

  async openMultipart(key: string): Promise<string> {
    const uploadId = `mp-${++this.nextUploadId}`;
    this.multiparts.set(uploadId, { key, blocks: new Map() });
    return uploadId;
  }

  async putBlock(
    key: string,
    uploadId: string,
    block: number,
    body: Readable,
    options: PutOptions,
  ): Promise<StoredObjectReceipt> {
    const upload = this.multiparts.get(uploadId);
    if (!upload || upload.key !== key) throw ApiError.notFound('object');
    const receipt = await this.put(`${key}#block`, body, options);
    const bytes = this.objects.get(`${key}#block`)!;
    this.objects.delete(`${key}#block`);
    if (bytes.length < MIN_BLOCK_BYTES) throw new ApiError('invalid_multipart', 'A block is at least 5 MiB.', 'data');
    upload.blocks.set(block, bytes);
    return { ...receipt, key };
  }

  async completeBlocks(
    key: string,
    uploadId: string,
    blocks: number[] | 'all',
    lastSource?: string,
  ): Promise<CompletedBlocksReceipt> {
    const upload = this.multiparts.get(uploadId);
    if (!upload || upload.key !== key) throw ApiError.notFound('object');
    const held = [...upload.blocks.keys()].sort((a, b) => a - b);
    // As Ceph's S3 does: a multipart upload completes with all of its parts or not at all.
    if (blocks !== 'all' && held.some((block) => !blocks.includes(block)))
      throw new ApiError('upload_conflict', 'The blocks named cannot be joined as they are.');
    const chosen = blocks === 'all' ? held : blocks;
    const parts = chosen.map((block) => upload.blocks.get(block));
    if (parts.some((part) => !part)) throw new ApiError('service_unavailable', 'no such block');
    const last = lastSource && blocks !== 'all' ? this.objects.get(lastSource) : undefined;
    const joined = Buffer.concat([...(parts as Buffer[]), ...(last ? [last] : [])]);
    this.multiparts.delete(uploadId);
    this.objects.set(key, joined);
    let offset = 0;
    const placed = chosen.map((block, index) => {
      const at = { block, offset, bytes: parts[index]!.length };
      offset += at.bytes;
      return at;
    });
    return { key, bytes: joined.length, blocks: placed };
  }

  async abortMultipart(_key: string, uploadId: string): Promise<void> {
    this.multiparts.delete(uploadId);
  }

  async put(key: string, body: Readable, options: PutOptions): Promise<StoredObjectReceipt> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      if (options.signal?.aborted) throw options.signal.reason ?? new Error('put cancelled');
      size += (chunk as Buffer).length;
      if (size > options.maxBytes) {
        body.destroy();
        throw new ApiError('file_too_large', `The object is larger than ${options.maxBytes} bytes.`, 'file');
      }
      chunks.push(chunk as Buffer);
    }
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('put cancelled');
    const bytes = Buffer.concat(chunks);
    this.objects.set(key, bytes);
    return { key, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
  }

  async get(key: string, range?: ByteRange): Promise<ObjectRead> {
    const bytes = this.objects.get(key);
    if (!bytes) throw ApiError.notFound('object');
    const part = range ? bytes.subarray(range.start, range.end + 1) : bytes;
    return { status: range ? 206 : 200, body: Readable.from([part]), contentLength: part.length };
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key);
  }
}

/** Records what would have gone to Redis. */
export class RecordingJobBus extends JobBus {
  readonly added: { name: JobName; payload: unknown; priority?: number }[] = [];
  readonly purged: string[] = [];

  constructor() {
    super(UNBOUND as never, UNBOUND as never, UNBOUND as never, silentLogger);
  }

  override async add<N extends JobName>(
    name: N,
    payloads: JobPayloads[N][],
    options: { priority?: number } = {},
  ): Promise<void> {
    for (const payload of payloads) this.added.push({ name, payload, priority: options.priority });
  }

  override async purge(objectIds: string[]): Promise<void> {
    this.purged.push(...objectIds);
  }

  override async depth(): Promise<QueueDepth> {
    return { waiting: 0, active: 0, delayed: 0, failed: 0 };
  }

  override async ping(): Promise<void> {}

  jobs<N extends JobName>(name: N): JobPayloads[N][] {
    return this.added.filter((job) => job.name === name).map((job) => job.payload as JobPayloads[N]);
  }
}

/**
 * Transactions over the in-memory tables: a rollback restores the snapshot taken at its start. They run one
 * at a time. The unit of work over them is the production one (TransactionalUnitOfWork).
 */
export class MemoryTransactions extends Transactions {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly memory: Memory) {
    super();
  }

  run<T>(fn: (repositories: TransactionRepositories) => Promise<T>): Promise<T> {
    const next = this.queue.then(() => this.runNow(fn));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async runNow<T>(fn: (repositories: TransactionRepositories) => Promise<T>): Promise<T> {
    const snapshot = this.memory.snapshot();
    try {
      return await fn({
        ...memoryRepositories(this.memory),
        /** Not faked: the uploads are proven against Postgres (test/e2e/uploads.test.ts). */
        uploads: new UploadRepository(UNBOUND as never),
      });
    } catch (error) {
      this.memory.restore(snapshot);
      throw error;
    }
  }
}

/** The in-memory repositories over one set of tables (the fakes the contracts in test/contracts hold). */
export function memoryRepositories(memory: Memory) {
  return {
    objects: new MemoryStoredObjects(memory),
    files: new MemoryFiles(memory),
    sessions: new MemorySessions(memory),
    containers: new MemoryContainers(memory),
    containerFiles: new MemoryContainerFiles(memory),
    responses: new MemoryResponses(memory),
    previews: new MemoryPreviews(memory),
    archives: new MemoryArchives(memory),
  };
}

/** A whole platform in memory: tables, bytes, queue, stager and unit of work, and the repositories outside it. */
export function inMemoryPlatform() {
  const memory = new Memory();
  const store = new InMemoryObjectStore();
  const jobs = new RecordingJobBus();
  const repositories = memoryRepositories(memory);
  const stager = new ObjectStager(repositories.objects, store, jobs, silentLogger);
  const uow = new TransactionalUnitOfWork(new MemoryTransactions(memory), stager, jobs);
  return {
    memory,
    store,
    jobs,
    stager,
    uow,
    ...repositories,
    converterStatus: new MemoryConverterStatus(memory),
  };
}

export type InMemoryPlatform = ReturnType<typeof inMemoryPlatform>;

/**
 * What the worker's purge jobs would do with what the units of work queued: bytes and rows of unreferenced
 * objects go.
 */
export async function runPurges(platform: InMemoryPlatform): Promise<number> {
  let purged = 0;
  for (const id of platform.jobs.purged.splice(0)) {
    const object = await platform.objects.find(id);
    if (!object || object.status !== 'PURGING' || object.refCount > 0) continue;
    await platform.store.delete(object.storageKey);
    await platform.objects.finishPurge(id);
    purged++;
  }
  return purged;
}
