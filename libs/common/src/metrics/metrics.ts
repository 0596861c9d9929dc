import { Controller, Get, Header, Inject, Module, type DynamicModule } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { Public } from '../auth/public.decorator';

export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');

/** One Prometheus registry per service, with the process defaults and an HTTP histogram. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

export function httpMetrics(registry: Registry) {
  const duration = new Histogram({
    name: 'uhp_http_request_duration_seconds',
    help: 'HTTP request duration by method and status class',
    labelNames: ['method', 'status'] as const,
    buckets: [0.005, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60],
    registers: [registry],
  });
  const total = new Counter({
    name: 'uhp_http_requests_total',
    help: 'HTTP requests by method and status',
    labelNames: ['method', 'status'] as const,
    registers: [registry],
  });
  return (method: string, status: number, seconds: number) => {
    const labels = { method, status: `${Math.floor(status / 100)}xx` };
    duration.observe(labels, seconds);
    total.inc(labels);
  };
}

@Controller()
class MetricsController {
  constructor(@Inject(METRICS_REGISTRY) private readonly registry: Registry) {}

  @Public()
  @Get('metrics')
  @Header('cache-control', 'no-store')
  // Prometheus' text format, by name: a scraper refuses an answer typed text/html.
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  async metrics(): Promise<string> {
    return this.registry.metrics();
  }
}

@Module({})
export class MetricsModule {
  /** `onApiPort`: also GET /metrics on the service's own port (else only on METRICS_PORT). */
  static forRoot(registry: Registry, options: { onApiPort?: boolean } = {}): DynamicModule {
    return {
      module: MetricsModule,
      global: true,
      controllers: options.onApiPort === false ? [] : [MetricsController],
      providers: [{ provide: METRICS_REGISTRY, useValue: registry }],
      exports: [METRICS_REGISTRY],
    };
  }
}
