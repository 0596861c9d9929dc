import { Global, Inject, Injectable, Module } from '@nestjs/common';
import { Counter, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@app/common';

/** `uhp_worker_jobs_total` by job and outcome, shared by every queue's processor. */
@Injectable()
export class JobMetrics {
  private readonly jobs: Counter<'job' | 'outcome'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.jobs = new Counter({ name: 'uhp_worker_jobs_total', help: 'Jobs handled by name and outcome', labelNames: ['job', 'outcome'] as const, registers: [registry] });
  }

  count(job: string, outcome: string): void {
    this.jobs.inc({ job, outcome });
  }
}

@Global()
@Module({ providers: [JobMetrics], exports: [JobMetrics] })
export class JobMetricsModule {}
