import { Global, Inject, Injectable, Module } from '@nestjs/common';
import { Gauge, type Registry } from 'prom-client';
import { LOGGER, type AppLogger } from '../logging/logging.module';
import { METRICS_REGISTRY } from '../metrics/metrics';
import type { CircuitBreaker } from './circuit-breaker';

/**
 * The dependencies a service calls and what it knows of each: up, or down since when and why. Only what calls
 * and probes have shown; nothing here sends a request, so /healthz (liveness) stays free of dependencies.
 */
@Injectable()
export class DependencyMonitor {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    @Inject(METRICS_REGISTRY) registry: Registry,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {
    const breakers = this.breakers;
    new Gauge({
      name: 'uhp_dependency_up',
      help: 'Whether a dependency this service calls answers (1) or is marked down after a timeout (0)',
      labelNames: ['dependency'] as const,
      registers: [registry],
      collect() {
        for (const [name, breaker] of breakers) this.set({ dependency: name }, breaker.isUp ? 1 : 0);
      },
    });
  }

  /** Follows a client's breaker: its state in /healthz and the gauge, each change in the log. */
  track(breaker: CircuitBreaker): void {
    this.breakers.set(breaker.dependency, breaker);
    breaker.onChange(({ dependency, isUp, reason }) => {
      if (isUp) this.logger.info({ dependency }, 'dependency answers again; calls to it go through');
      else
        this.logger.error(
          { dependency, reason },
          'dependency marked down; calls to it fail fast until a probe answers',
        );
    });
  }

  snapshot(): Record<string, ReturnType<CircuitBreaker['state']>> {
    return Object.fromEntries([...this.breakers].map(([name, breaker]) => [name, breaker.state()]));
  }
}

@Global()
@Module({ providers: [DependencyMonitor], exports: [DependencyMonitor] })
export class DependencyMonitorModule {}
