import { Controller, Get, Inject, Module, Optional, type DynamicModule, type Provider } from '@nestjs/common';
import { ApiError } from '../errors/api-error';
import { GracefulShutdown } from '../lifecycle/graceful-shutdown';
import { LOGGER, type AppLogger } from '../logging/logging.module';
import { Public } from '../auth/public.decorator';

/** A dependency the service needs to be ready (Postgres, Redis, S3, the storage service …). */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

export const READINESS_CHECKS = Symbol('READINESS_CHECKS');
/** Optional: what /readyz also reports without failing on it (e.g. which preview converters can run). */
export const READINESS_DETAILS = Symbol('READINESS_DETAILS');
export type ReadinessDetails = () => Record<string, unknown>;
const CHECK_TIMEOUT_MS = 3_000;

async function withTimeout(check: ReadinessCheck): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check.check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    clearTimeout(timer);
  }
}

@Controller()
class HealthController {
  constructor(
    @Inject(READINESS_CHECKS) private readonly checks: ReadinessCheck[],
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Optional() @Inject(READINESS_DETAILS) private readonly details?: ReadinessDetails,
    @Optional() @Inject(GracefulShutdown) private readonly shutdown?: GracefulShutdown,
  ) {}

  @Public()
  @Get('healthz')
  alive() {
    return { status: 'ok' };
  }

  @Public()
  @Get('readyz')
  async ready() {
    // Out of rotation the moment the process starts to stop, whatever its dependencies say.
    if (this.shutdown?.isDraining) throw new ApiError('service_unavailable', 'Shutting down.');
    const results = await Promise.all(this.checks.map(async (c) => [c.name, await withTimeout(c)] as const));
    const failed = results.filter(([, problem]) => problem !== null);
    if (failed.length > 0) {
      // Public: the body names the dependency, never its error text (hosts, ports, driver messages);
      // the log has it.
      this.logger.warn({ failed: Object.fromEntries(failed) }, 'not ready');
      const names = failed.map(([name]) => name).join(', ');
      throw new ApiError('service_unavailable', `Not ready: ${names} did not answer.`);
    }
    return {
      status: 'ok',
      checks: Object.fromEntries(results.map(([name]) => [name, 'ok'])),
      ...(this.details ? this.details() : {}),
    };
  }
}

/** /healthz (alive) and /readyz (every readiness check answers). */
@Module({})
export class HealthModule {
  static forRoot(checks: Provider, imports: DynamicModule['imports'] = [], details: Provider[] = []): DynamicModule {
    return { module: HealthModule, imports, controllers: [HealthController], providers: [checks, ...details] };
  }
}
