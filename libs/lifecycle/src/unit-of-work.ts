import { Inject, Injectable } from '@nestjs/common';
import {
  Transactions,
  type ArchiveRepository,
  type ContainerFileRepository,
  type ContainerRepository,
  type FileRepository,
  type PreviewRepository,
  type ResponseRepository,
  type SessionRepository,
  type StoredObjectRepository,
  type TransactionRepositories,
  type UploadRepository,
} from '@app/db';
import { JobBus } from '@app/queue';
import { ObjectStager, type StagedObject } from './object-stager';

/**
 * One transaction, as a service sees it: the repositories bound to it, and the only ways to change
 * which rows point at which objects.
 */
export abstract class Work {
  abstract readonly files: FileRepository;
  abstract readonly sessions: SessionRepository;
  abstract readonly containers: ContainerRepository;
  abstract readonly containerFiles: ContainerFileRepository;
  abstract readonly responses: ResponseRepository;
  abstract readonly previews: PreviewRepository;
  abstract readonly archives: ArchiveRepository;
  abstract readonly uploads: UploadRepository;
  /** A staged object becomes READY with its first reference: the row the caller creates next points at it. */
  abstract adopt(object: StagedObject): Promise<void>;
  /** One more reference on a READY object of the principal; false when it is already going away. */
  abstract retain(principalId: string, objectId: string): Promise<boolean>;
  /**
   * Drops one reference per id: pass exactly the ids that the caller's own conditional update took
   * from live rows, so each reference goes once however many deletes race. Objects left with none are
   * purged after the commit.
   */
  abstract release(objectIds: string[]): Promise<void>;
}

export interface RunOptions {
  /** Bytes staged for this work: adopted ones are kept; on rollback, or if not adopted, they are discarded. */
  staged?: StagedObject[];
}

/**
 * The one home of an object's life. `run` opens a transaction and hands the work a `Work`; when it
 * commits, objects whose last reference went are queued for purge; when it rolls back (or a staged
 * object was not adopted), staged objects are discarded. Nothing is half-written either way.
 */
export abstract class UnitOfWork {
  abstract run<T>(work: (work: Work) => Promise<T>, options?: RunOptions): Promise<T>;
}

class TransactionWork extends Work {
  readonly files: FileRepository;
  readonly sessions: SessionRepository;
  readonly containers: ContainerRepository;
  readonly containerFiles: ContainerFileRepository;
  readonly responses: ResponseRepository;
  readonly previews: PreviewRepository;
  readonly archives: ArchiveRepository;
  readonly uploads: UploadRepository;
  private readonly objects: StoredObjectRepository;
  readonly adopted = new Set<string>();
  readonly purging: string[] = [];

  constructor(repositories: TransactionRepositories) {
    super();
    this.files = repositories.files;
    this.sessions = repositories.sessions;
    this.containers = repositories.containers;
    this.containerFiles = repositories.containerFiles;
    this.responses = repositories.responses;
    this.previews = repositories.previews;
    this.archives = repositories.archives;
    this.uploads = repositories.uploads;
    this.objects = repositories.objects;
  }

  async adopt(object: StagedObject): Promise<void> {
    await this.objects.markReady(object.principalId, object.id, object.bytes, object.sha256);
    this.adopted.add(object.id);
  }

  retain(principalId: string, objectId: string): Promise<boolean> {
    return this.objects.retain(principalId, objectId);
  }

  async release(objectIds: string[]): Promise<void> {
    this.purging.push(...(await this.objects.release(objectIds)));
  }
}

@Injectable()
export class TransactionalUnitOfWork extends UnitOfWork {
  constructor(
    @Inject(Transactions) private readonly transactions: Transactions,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(JobBus) private readonly jobs: JobBus,
  ) {
    super();
  }

  async run<T>(fn: (work: Work) => Promise<T>, options: RunOptions = {}): Promise<T> {
    const staged = options.staged ?? [];
    const work = { current: null as TransactionWork | null };
    let result: T;
    try {
      result = await this.transactions.run(async (repositories) => {
        work.current = new TransactionWork(repositories);
        return fn(work.current);
      });
    } catch (error) {
      await this.stager.discard(staged);
      throw error;
    }
    const committed = work.current!;
    await this.stager.discard(staged.filter((object) => !committed.adopted.has(object.id)));
    await this.jobs.purge(committed.purging);
    return result;
  }
}
