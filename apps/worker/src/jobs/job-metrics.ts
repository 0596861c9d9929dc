import { Global, Inject, Injectable, Module } from '@nestjs/common';
import { Counter, Gauge, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@app/common';
import { JobBus } from '@app/queue';
import { QUEUE_NAMES } from '@app/contracts';

const STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/**
 * `uhp_worker_jobs_total` by job and outcome, shared by every queue's processor, and `uhp_queue_jobs`:
 * the depth of every queue at scrape time, whichever queues this worker consumes.
 */
@Injectable()
export class JobMetrics {
  private readonly jobs: Counter<'job' | 'outcome'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry, @Inject(JobBus) bus: JobBus) {
    this.jobs = new Counter({
      name: 'uhp_worker_jobs_total',
      help: 'Jobs handled by name and outcome',
      labelNames: ['job', 'outcome'] as const,
      registers: [registry],
    });
    new Gauge({
      name: 'uhp_queue_jobs',
      help: 'Jobs in each queue by state',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        for (const queue of QUEUE_NAMES) {
          const depth = await bus.depth(queue).catch(() => null);
          if (depth) for (const state of STATES) this.set({ queue, state }, depth[state]);
        }
      },
    });
  }

  count(job: string, outcome: string): void {
    this.jobs.inc({ job, outcome });
  }
}

@Global()
@Module({ providers: [JobMetrics], exports: [JobMetrics] })
export class JobMetricsModule {}
