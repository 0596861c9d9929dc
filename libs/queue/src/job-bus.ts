import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, type OnModuleDestroy, Optional } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { JOB, JOBS, QUEUE, type JobName, type JobPayloads, type QueueName } from '@app/contracts';
import {
  APP_CONFIG,
  ApiError,
  CircuitBreaker,
  DependencyMonitor,
  LOGGER,
  currentRequestId,
  withTimeout,
  type AppLogger,
} from '@app/common';

/** BullMQ's largest priority. */
const MAX_PRIORITY = 2_097_152;

export interface QueueDepth {
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
}

/**
 * The one way to enqueue work: a job name of the contract and its typed payload. The job id and the
 * retry options come from the contract, the request id from the current request.
 */
@Injectable()
export class JobBus implements OnModuleDestroy {
  private readonly queues: Record<QueueName, Queue>;
  /**
   * Whether Redis answers: a command that waits REDIS_COMMAND_TIMEOUT_MS, or finds nobody listening, marks it
   * down, and enqueues are refused at once (503) until PING answers again.
   */
  readonly breaker: CircuitBreaker;
  private readonly commandTimeoutMs: number;

  constructor(
    @InjectQueue(QUEUE.purge) purge: Queue,
    @InjectQueue(QUEUE.preview) preview: Queue,
    @InjectQueue(QUEUE.archive) archive: Queue,
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Optional() @Inject(APP_CONFIG) config: { REDIS_COMMAND_TIMEOUT_MS: number } = { REDIS_COMMAND_TIMEOUT_MS: 5_000 },
    @Optional() @Inject(DependencyMonitor) dependencies?: DependencyMonitor,
  ) {
    this.queues = { purge, preview, archive };
    this.commandTimeoutMs = config.REDIS_COMMAND_TIMEOUT_MS;
    this.breaker = new CircuitBreaker({
      dependency: 'redis',
      probe: async () => {
        await purge.count();
      },
      probeTimeoutMs: this.commandTimeoutMs,
    });
    dependencies?.track(this.breaker);
  }

  onModuleDestroy(): void {
    this.breaker.close();
  }

  /**
   * One call to Redis, bounded by REDIS_COMMAND_TIMEOUT_MS and refused while Redis is marked down. (A command
   * cut off this way may still land once Redis answers: every job id is deterministic, so it lands once.)
   */
  private command<T>(what: string, call: () => Promise<T>): Promise<T> {
    return this.breaker.run(() => withTimeout(`redis ${what}`, this.commandTimeoutMs, call));
  }

  /**
   * Adds the jobs; a job whose id is already waiting or running is not added twice. 503 when Redis will
   * not take them. `priority` (1 first) orders the queue: a principal's k-th job waiting gets k, so one
   * principal's backlog does not hold up another's first job.
   */
  async add<N extends JobName>(
    name: N,
    payloads: JobPayloads[N][],
    options: { priority?: number } = {},
  ): Promise<void> {
    if (payloads.length === 0) return;
    const spec = JOBS[name];
    const requestId = currentRequestId();
    const jobs = payloads.map((payload) => {
      const data = { ...payload, requestId: payload.requestId ?? requestId };
      const priority =
        options.priority === undefined
          ? {}
          : { priority: Math.min(Math.max(1, Math.round(options.priority)), MAX_PRIORITY) };
      return { name, data, opts: { ...spec.options, ...priority, jobId: spec.jobId(data) } };
    });
    try {
      await this.command('enqueue', () => this.queues[spec.queue].addBulk(jobs));
    } catch (error) {
      this.logger.warn({ err: error, job: name, count: jobs.length }, 'could not enqueue');
      throw new ApiError('service_unavailable', 'The job queue is unavailable; try again.');
    }
  }

  /**
   * Hands objects whose last reference went to the purge queue. A lost enqueue is logged, not failed:
   * the worker's sweep finds PURGING objects with no job and queues them again.
   */
  async purge(objectIds: string[]): Promise<void> {
    try {
      await this.add(
        JOB.purgeObject,
        objectIds.map((objectId) => ({ objectId })),
      );
    } catch {
      this.logger.warn({ objectIds }, 'purges not queued now; the sweep will queue them');
    }
  }

  /**
   * Hands objects completed unhashed to the worker to measure. A lost enqueue is logged, not failed:
   * the sweep finds files still "uploaded" and queues them again.
   */
  async hash(objectIds: string[]): Promise<void> {
    try {
      await this.add(
        JOB.hashObject,
        objectIds.map((objectId) => ({ objectId })),
      );
    } catch {
      this.logger.warn({ objectIds }, 'hash jobs not queued now; the sweep will queue them');
    }
  }

  /** Registers the periodic job: one scheduler in Redis, however many workers call this. */
  async schedule<N extends JobName>(name: N, everyMs: number, payload: JobPayloads[N]): Promise<void> {
    const spec = JOBS[name];
    await this.queues[spec.queue].upsertJobScheduler(
      spec.jobId(payload),
      { every: everyMs },
      { name, data: payload, opts: spec.options },
    );
  }

  async depth(queue: QueueName): Promise<QueueDepth> {
    const counts = await this.command('count', () =>
      this.queues[queue].getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized'),
    );
    return {
      waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
      active: counts.active ?? 0,
      delayed: counts.delayed ?? 0,
      failed: counts.failed ?? 0,
    };
  }

  async ping(): Promise<void> {
    await this.command('count', () => this.queues.purge.count());
  }
}
