import {
  Controller,
  Get,
  Inject,
  Module,
  Optional,
  type DynamicModule,
  type Provider,
  type Type,
} from '@nestjs/common';
import { ApiError } from '../errors/api-error';
import { GracefulShutdown } from '../lifecycle/graceful-shutdown';
import { LOGGER, type AppLogger } from '../logging/logging.module';
import { Public } from '../auth/public.decorator';
import { DependencyMonitor } from './dependencies';

/**
 * What the service needs of its own to serve: its database pool (and, in the worker, its converters checked
 * once). S3, Redis and the storage service are not readiness checks: one of them stalling would take every pod
 * out of rotation at once, and clients would meet refused connections instead of the 503 each route answers
 * while that dependency is down. Their state is in /healthz and the `uhp_dependency_up` gauge.
 */
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
    @Optional() @Inject(DependencyMonitor) private readonly dependencies?: DependencyMonitor,
  ) {}

  /** Liveness: answers while the process does. The dependencies it reports are what calls found, never asked now. */
  @Public()
  @Get('healthz')
  alive() {
    return { status: 'ok', dependencies: this.dependencies?.snapshot() ?? {} };
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

/** /healthz (alive, with what is known of the dependencies) and /readyz (every readiness check answers). */
@Module({})
export class HealthModule {
  static forRoot(checks: Provider, imports: DynamicModule['imports'] = [], details: Provider[] = []): DynamicModule {
    return { module: HealthModule, imports, controllers: [HealthController], providers: [checks, ...details] };
  }
}

export interface ServiceHealthOptions {
  /** Providers of READINESS_DETAILS: what /readyz reports besides. */
  details?: Provider[];
  /** Further checks of the service's own (built from the injected dependencies). */
  checks?: { inject: Array<Type | symbol | string>; build(...dependencies: unknown[]): ReadinessCheck[] };
  /** Modules the checks' dependencies come from. */
  imports?: DynamicModule['imports'];
}

/** /healthz and /readyz of a service: ready when its database pool answers (`database`) and its own checks pass. */
export function serviceHealth(database: Type<{ ping(): Promise<void> }>, options: ServiceHealthOptions = {}) {
  const own = options.checks ?? { inject: [], build: () => [] };
  return HealthModule.forRoot(
    {
      provide: READINESS_CHECKS,
      useFactory: (db: { ping(): Promise<void> }, ...dependencies: unknown[]): ReadinessCheck[] => [
        { name: 'postgres', check: () => db.ping() },
        ...own.build(...dependencies),
      ],
      inject: [database, ...own.inject],
    },
    options.imports ?? [],
    options.details ?? [],
  );
}
