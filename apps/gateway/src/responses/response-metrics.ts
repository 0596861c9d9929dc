import { Inject, Injectable } from '@nestjs/common';
import { Counter, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@app/common';

/** Responses by agent and outcome, and how long agents take. */
@Injectable()
export class ResponseMetrics {
  private readonly duration: Histogram<'agent' | 'status'>;
  private readonly total: Counter<'agent' | 'status'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.duration = new Histogram({
      name: 'uhp_response_duration_seconds',
      help: 'Time from a response starting to its agent finishing, by agent and final status',
      labelNames: ['agent', 'status'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 180],
      registers: [registry],
    });
    this.total = new Counter({
      name: 'uhp_responses_total',
      help: 'Responses by agent and final status',
      labelNames: ['agent', 'status'],
      registers: [registry],
    });
  }

  start(agent: string): (status: string) => void {
    const started = process.hrtime.bigint();
    return (status) => {
      this.duration.observe({ agent, status }, Number(process.hrtime.bigint() - started) / 1e9);
      this.total.inc({ agent, status });
    };
  }
}
