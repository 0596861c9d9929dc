import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_REGISTRY } from '@app/common';

/** Conversion time and outcomes per converter, and how converters are confined. */
@Injectable()
export class PreviewMetrics {
  private readonly seconds: Histogram<'converter' | 'outcome'>;
  private readonly conversions: Counter<'converter' | 'outcome'>;
  private readonly isolationGauge: Gauge<'network' | 'filesystem' | 'chromium_sandbox'>;

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
    this.isolationGauge = new Gauge({
      name: 'uhp_preview_isolation',
      help: 'How converter processes are confined here: 1 on the mode in force (network, filesystem, chromium_sandbox)',
      labelNames: ['network', 'filesystem', 'chromium_sandbox'],
      registers: [registry],
    });
  }

  /** The one series of uhp_preview_isolation that is 1: the mode in force now. */
  isolation(mode: { network: string; filesystem: string; chromiumSandbox: boolean }): void {
    this.isolationGauge.reset();
    this.isolationGauge.set(
      { network: mode.network, filesystem: mode.filesystem, chromium_sandbox: String(mode.chromiumSandbox) },
      1,
    );
  }

  start(): (converter: string, outcome: string) => void {
    const started = process.hrtime.bigint();
    return (converter, outcome) => {
      this.seconds.observe({ converter, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
      this.conversions.inc({ converter, outcome });
    };
  }
}
