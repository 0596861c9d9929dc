import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@app/common';
import { QUEUE } from '@app/contracts';

const STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/** Conversion time and outcomes per converter, and the depth of the worker's queues at scrape time. */
@Injectable()
export class PreviewMetrics {
  private readonly seconds: Histogram<'converter' | 'outcome'>;
  private readonly conversions: Counter<'converter' | 'outcome'>;

  constructor(
    @Inject(METRICS_REGISTRY) registry: Registry,
    @InjectQueue(QUEUE.preview) previewQueue: Queue,
    @InjectQueue(QUEUE.purge) purgeQueue: Queue,
  ) {
    this.seconds = new Histogram({
      name: 'uhp_preview_conversion_seconds',
      help: 'Time of one conversion (download of the source, conversion, check, upload of the PDF) by converter and outcome',
      labelNames: ['converter', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers: [registry],
    });
    this.conversions = new Counter({ name: 'uhp_preview_conversions_total', help: 'Conversions by converter and outcome (ok, or the failure)', labelNames: ['converter', 'outcome'], registers: [registry] });
    new Gauge({
      name: 'uhp_queue_jobs',
      help: 'Jobs in each queue by state',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        for (const queue of [previewQueue, purgeQueue]) {
          const counts = await queue.getJobCounts(...STATES).catch(() => null);
          if (!counts) continue;
          for (const state of STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
        }
      },
    });
  }

  start(): (converter: string, outcome: string) => void {
    const started = process.hrtime.bigint();
    return (converter, outcome) => {
      this.seconds.observe({ converter, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
      this.conversions.inc({ converter, outcome });
    };
  }
}
