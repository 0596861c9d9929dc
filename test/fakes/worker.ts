import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { Registry } from 'prom-client';
import { GracefulShutdown, workerConfigSchema, type WorkerConfig } from '@app/common';
import type { JobName, JobPayloads, QueueName } from '@app/contracts';
import { JobMetrics } from '../../apps/worker/src/jobs/job-metrics';
import { ProcessorContext, type QueueProcessor } from '../../apps/worker/src/jobs/queue-processor';
import { RecordingJobBus, silentLogger } from './platform';

/** The worker's config as the processors see it: the schema's defaults, with these overrides. */
export function workerConfig(overrides: Record<string, string> = {}): WorkerConfig {
  return workerConfigSchema.parse(overrides);
}

/** What a processor takes from the worker, with the job counts it made readable (`"job outcome" → count`). */
export function processorContext(config: WorkerConfig = workerConfig()) {
  const registry = new Registry();
  const shutdown = new GracefulShutdown();
  const context = new ProcessorContext(config, silentLogger, shutdown, new JobMetrics(registry, new RecordingJobBus()));
  const counted = async (): Promise<Record<string, number>> => {
    const metric = await registry.getSingleMetric('uhp_worker_jobs_total')!.get();
    return Object.fromEntries(metric.values.map(({ labels, value }) => [`${labels.job} ${labels.outcome}`, value]));
  };
  return { context, shutdown, counted };
}

/** A job as BullMQ hands it to a processor: no Redis behind it. */
export function fakeJob<N extends JobName>(name: N, data: JobPayloads[N], attempts: number) {
  return { id: `${name}-1`, name, data, attemptsMade: 0, opts: { attempts } } as unknown as Job;
}

/**
 * A BullMQ Worker whose constructor never ran (no Redis): what a processor's boot sets on it can be read, and
 * run/pause/close only record that they were called.
 */
export function unstartedWorker() {
  const calls: string[] = [];
  const worker = Object.create(Worker.prototype) as Worker;
  Object.assign(worker, {
    id: 'worker-1',
    opts: { lockDuration: 30_000, lockRenewTime: 15_000, stalledInterval: 30_000 },
    run: async () => void calls.push('run'),
    pause: async () => void calls.push('pause'),
    close: async () => void calls.push('close'),
  });
  return { worker, calls };
}

/**
 * Runs a job as BullMQ would with its attempts: each failed attempt is reported to the processor (the `failed`
 * event) and tried again, unless it was the last or the failure is an UnrecoverableError. `attempts` lists
 * what each attempt ended with.
 */
export async function runAttempts(processor: Pick<QueueProcessor<QueueName>, 'process' | 'onFailed'>, job: Job) {
  const attempts: string[] = [];
  for (;;) {
    try {
      const value = await processor.process(job, 'token');
      attempts.push('completed');
      return { attempts, value, error: undefined };
    } catch (error) {
      const failure = error as Error;
      job.attemptsMade++;
      processor.onFailed(job, failure);
      attempts.push(failure instanceof UnrecoverableError ? 'failed for good' : 'failed');
      if (failure instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1))
        return { attempts, value: undefined, error: failure };
    }
  }
}
