import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP_CONFIG, LOGGER, type AppLogger, type WorkerConfig } from '@app/common';
import { ConverterStatusRepository } from '@app/db';
import { type ConverterRegistry, createPreviewConverters } from './converter.registry';
import type { Availability } from './pdf-converter';

/** How often a worker re-checks its converters and records what it found for the gateways. */
const STATUS_REFRESH_MS = 60_000;

/**
 * The converters of this worker, built from config, started lazily on first use and closed on
 * shutdown. Their availability is recorded in Postgres (converter_status) at start and every minute,
 * which is how gateways know which formats preview (GET /v1/limits) and when to answer 501.
 */
@Injectable()
export class PreviewConverters implements OnApplicationBootstrap, OnModuleDestroy {
  private registry: Promise<ConverterRegistry> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastAvailability: Record<string, Availability> = {};
  private checked = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(ConverterStatusRepository) private readonly statuses: ConverterStatusRepository,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  get enabled(): boolean {
    return this.config.PREVIEW_ENABLED;
  }

  private get workDir(): string {
    return this.config.PREVIEW_WORK_DIR ?? join(tmpdir(), `uhp-previews-${process.pid}`);
  }

  /** Where jobs put a source and its PDF while they convert (beside, not inside, the converters' own dir). */
  get jobsDir(): string {
    return join(this.workDir, 'jobs');
  }

  /** How long a job waits for one conversion before it gives up (the converter's own limit plus its cleanup). */
  get jobTimeoutMs(): number {
    return this.config.PREVIEW_CONVERSION_TIMEOUT_MS + 15_000;
  }

  get(): Promise<ConverterRegistry> {
    this.registry ??= createPreviewConverters({
      workDir: join(this.workDir, 'converters'),
      timeoutMs: this.config.PREVIEW_CONVERSION_TIMEOUT_MS,
      isolateNetwork: this.config.PREVIEW_ISOLATE_NETWORK,
      office: {
        poolSize: this.config.PREVIEW_OFFICE_POOL_SIZE,
        maxConversionsPerProcess: this.config.PREVIEW_OFFICE_MAX_CONVERSIONS,
        addressSpaceBytes: this.config.PREVIEW_OFFICE_MEMORY_BYTES,
      },
    }).then((converters) => converters.registry);
    return this.registry;
  }

  /**
   * Readiness: the first check of the converters has been recorded, so gateways know what previews
   * (a converter that is missing is reported, not a reason to be unready).
   */
  async checkedOnce(): Promise<void> {
    if (this.enabled && !this.checked) throw new Error('still checking the preview converters');
  }

  /** What /readyz reports: each converter and whether it can run here. */
  availability(): Record<string, Availability> {
    return this.lastAvailability;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.enabled) return;
    // Not awaited: checking LibreOffice and Chromium takes seconds and must not hold up readiness.
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), STATUS_REFRESH_MS);
    this.timer.unref();
  }

  private async refresh(): Promise<void> {
    try {
      const availability = await (await this.get()).availability();
      const changed = JSON.stringify(availability) !== JSON.stringify(this.lastAvailability);
      this.lastAvailability = availability;
      await this.statuses.save(
        Object.entries(availability).map(([name, state]) => ({
          name,
          available: state.ok,
          reason: state.reason ?? null,
        })),
      );
      this.checked = true;
      if (changed) this.logger.info({ converters: availability }, 'preview converters checked');
    } catch (error) {
      this.logger.warn({ err: error }, 'could not check or record the preview converters');
    }
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.registry) await (await this.registry).close();
  }
}
