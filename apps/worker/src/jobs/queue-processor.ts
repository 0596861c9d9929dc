import { OnWorkerEvent, WorkerHost } from '@nestjs/bullmq';
import { Global, Inject, Injectable, Module, type OnApplicationBootstrap } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { APP_CONFIG, GracefulShutdown, LOGGER, type AppLogger, type WorkerConfig } from '@app/common';
import { runJob, type JobHandlers } from '@app/queue';
import type { JobPayloads, JobsOf, QueueName } from '@app/contracts';
import { ActiveJobs } from './active-jobs';
import { applyJobLockTimings } from './bullmq-lock-manager';
import { JobMetrics } from './job-metrics';

/** What every queue processor takes from the worker. */
@Injectable()
export class ProcessorContext {
  constructor(
    @Inject(APP_CONFIG) readonly config: WorkerConfig,
    @Inject(LOGGER) readonly logger: AppLogger,
    @Inject(GracefulShutdown) readonly shutdown: GracefulShutdown,
    @Inject(JobMetrics) readonly metrics: JobMetrics,
  ) {}
}

@Global()
@Module({ providers: [ProcessorContext], exports: [ProcessorContext] })
export class QueueProcessorModule {}

/** How one queue differs from the others: data, read by the one code path of QueueProcessor. */
export interface QueueOptions<Q extends QueueName> {
  queue: Q;
  /** How many of the queue's jobs this worker runs at once. */
  concurrency(config: WorkerConfig): number;
  /** False: this worker leaves the queue to the workers that can take it. Taken when absent. */
  isEnabled?(config: WorkerConfig): boolean;
  /** A failure no retry can fix besides UnrecoverableError (the same input fails the same way). None when absent. */
  isPermanent?(error: unknown): boolean;
}

/** What "marked failed" means for a job's rows, so that readers of the row hear why; per job name, if anything. */
export type GiveUpHandlers<Q extends QueueName> = {
  [N in JobsOf<Q>]?: (payload: JobPayloads[N], error: Error) => Promise<void>;
};

/**
 * A queue's consumer: boot, concurrency, shutdown, metrics and the one give-up policy, for every queue.
 *
 * Give-up policy. Attempts and backoff are the job's own options (JOBS in @app/contracts). A handler's failure is
 * - while the worker stops (its signal aborted): handed back to the queue untouched (ActiveJobs), nothing marked;
 * - permanent (UnrecoverableError, or the queue's `isPermanent`): marked failed and failed for good, not retried;
 * - otherwise: retried with the backoff, and marked failed when the last attempt fails.
 * The rows are marked before BullMQ records the job failed, so whoever hears of the failure finds the row saying so.
 * A job that never reached its handler (unknown name, malformed payload) fails for good with nothing to mark.
 */
export abstract class QueueProcessor<Q extends QueueName> extends WorkerHost implements OnApplicationBootstrap {
  protected readonly config: WorkerConfig;
  protected readonly logger: AppLogger;
  protected abstract readonly handlers: JobHandlers<Q>;
  protected readonly giveUps: GiveUpHandlers<Q> = {};
  private readonly active = new ActiveJobs();
  private guarded?: JobHandlers<Q>;

  constructor(
    private readonly context: ProcessorContext,
    private readonly options: QueueOptions<Q>,
  ) {
    super();
    this.config = context.config;
    this.logger = context.logger;
  }

  onApplicationBootstrap(): void | Promise<void> {
    if (this.options.isEnabled?.(this.config) === false) return;
    this.worker.concurrency = this.options.concurrency(this.config);
    this.context.shutdown.onDrain(this.options.queue, (grace) => this.active.drain(this.worker, grace, this.logger));
    applyJobLockTimings(this.worker, this.config.JOB_LOCK_MS);
    void this.worker.run();
  }

  process(job: Job, token?: string): Promise<unknown> {
    this.guarded ??= this.withGiveUpPolicy(this.handlers);
    const handlers = this.guarded;
    return this.active.run(job, token, (signal) => runJob(this.options.queue, handlers, job, signal));
  }

  /** Every attempt that failed, whatever failed it (a handler, a malformed payload, a stall). */
  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    this.context.metrics.count(job?.name ?? 'unknown', 'failed');
    this.logger.warn(
      {
        queue: this.options.queue,
        jobId: job?.id,
        job: job?.name,
        attempts: job?.attemptsMade,
        permanent: error instanceof UnrecoverableError,
        err: error,
      },
      'job failed',
    );
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.warn({ queue: this.options.queue, err: error }, 'worker error');
  }

  private withGiveUpPolicy(handlers: JobHandlers<Q>): JobHandlers<Q> {
    const guarded: Record<string, unknown> = {};
    for (const name of Object.keys(handlers) as JobsOf<Q>[]) {
      const handler: JobHandlers<Q>[typeof name] = handlers[name];
      guarded[name] = async (payload: JobPayloads[typeof name], job: Job, signal: AbortSignal) => {
        try {
          const result = await handler(payload, job, signal);
          this.context.metrics.count(job.name, typeof result === 'string' ? result : 'done');
          return result;
        } catch (error) {
          throw await this.failedAttempt(name, payload, job, signal, error);
        }
      };
    }
    return guarded as JobHandlers<Q>;
  }

  /** The give-up policy: what the failure becomes, after the rows were marked failed if this was the last try. */
  private async failedAttempt<N extends JobsOf<Q>>(
    name: N,
    payload: JobPayloads[N],
    job: Job,
    signal: AbortSignal,
    error: unknown,
  ): Promise<unknown> {
    if (signal.aborted) return error;
    const isPermanent = error instanceof UnrecoverableError || this.options.isPermanent?.(error) === true;
    const isLastAttempt = isPermanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const failure = error instanceof Error ? error : new Error(String(error));
    if (isLastAttempt) await this.giveUp(name, payload, job, failure);
    return isPermanent && !(failure instanceof UnrecoverableError) ? new UnrecoverableError(failure.message) : error;
  }

  private async giveUp<N extends JobsOf<Q>>(name: N, payload: JobPayloads[N], job: Job, error: Error) {
    const markFailed: GiveUpHandlers<Q>[N] = this.giveUps[name];
    try {
      await markFailed?.(payload, error);
    } catch (failure) {
      // The job's own failure is what BullMQ records; this one is the worker's to tell.
      this.logger.error({ err: failure, jobId: job.id, job: job.name }, 'could not mark the job failed');
    }
  }
}
