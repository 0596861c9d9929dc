import { Inject, Injectable } from '@nestjs/common';
import { Counter, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@app/common';

/** Conversion time and outcomes per converter. */
@Injectable()
export class PreviewMetrics {
  private readonly seconds: Histogram<'converter' | 'outcome'>;
  private readonly conversions: Counter<'converter' | 'outcome'>;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.seconds = new Histogram({
      name: 'uhp_preview_conversion_seconds',
      help: 'Time of one conversion (source download, conversion, check, PDF upload) by converter and outcome',
      labelNames: ['converter', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers: [registry],
    });
    this.conversions = new Counter({
      name: 'uhp_preview_conversions_total',
      help: 'Conversions by converter and outcome (ok, or the failure)',
      labelNames: ['converter', 'outcome'],
      registers: [registry],
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
