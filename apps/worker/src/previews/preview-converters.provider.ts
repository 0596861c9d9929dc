import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { chmod, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP_CONFIG, LOGGER, type AppLogger, type WorkerConfig } from '@app/common';
import { ConverterStatusRepository } from '@app/db';
import {
  type ConverterRegistry,
  createPreviewConverters,
  type PreviewConverters as Converters,
} from './converter.registry';
import type { Availability } from './pdf-converter';
import { PreviewMetrics } from './preview-metrics';
import { describeIsolation } from './sandbox/isolation';
import type { IsolationMode } from './sandbox/sandbox';

/** What /readyz says about the confinement of the converters. */
export interface IsolationReport {
  network: IsolationMode['network'];
  filesystem: IsolationMode['filesystem'];
  landlockAbi: number;
  chromiumSandbox: boolean;
  refused?: string;
}

/** How often a worker re-checks its converters and records what it found for the gateways. */
const STATUS_REFRESH_MS = 60_000;

/**
 * The converters of this worker, built from config, started lazily on first use and closed on
 * shutdown. Their availability is recorded in Postgres (converter_status) at start and every minute,
 * which is how gateways know which formats preview (GET /v1/limits) and when to answer 501.
 */
@Injectable()
export class PreviewConverters implements OnApplicationBootstrap, OnModuleDestroy {
  private converters: Promise<Converters> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastAvailability: Record<string, Availability> = {};
  private mode: IsolationMode | null = null;
  private reportedMode = '';
  private checked = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: WorkerConfig,
    @Inject(ConverterStatusRepository) private readonly statuses: ConverterStatusRepository,
    @Inject(PreviewMetrics) private readonly metrics: PreviewMetrics,
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
    this.converters ??= (async () => {
      // Converters of other uids pass through the work dir to their own dirs beneath it (never into jobs/).
      await mkdir(this.workDir, { recursive: true, mode: 0o711 });
      await chmod(this.workDir, 0o711);
      const converters = await createPreviewConverters({
        workDir: join(this.workDir, 'converters'),
        timeoutMs: this.config.PREVIEW_CONVERSION_TIMEOUT_MS,
        sandbox: { network: this.config.PREVIEW_ISOLATE_NETWORK, uidBase: this.config.PREVIEW_SANDBOX_UID },
        office: {
          maxInputBytes: this.config.PREVIEW_MAX_OFFICE_INPUT_BYTES,
          poolSize: this.config.PREVIEW_OFFICE_POOL_SIZE,
          maxConversionsPerProcess: this.config.PREVIEW_OFFICE_MAX_CONVERSIONS,
          addressSpaceBytes: this.config.PREVIEW_OFFICE_MEMORY_BYTES,
        },
        chromium: { maxInputBytes: this.config.PREVIEW_MAX_TEXT_INPUT_BYTES },
        image: { maxInputBytes: this.config.PREVIEW_MAX_IMAGE_INPUT_BYTES },
      });
      this.mode = converters.isolation;
      return converters;
    })().catch((error: unknown) => {
      this.converters = null;
      throw error;
    });
    return this.converters.then((converters) => converters.registry);
  }

  /** What /readyz reports about the converters' confinement; null until it has been decided. */
  isolation(): IsolationReport | null {
    if (!this.mode) return null;
    const { network, filesystem, landlockAbi, chromiumSandbox, refused } = this.mode;
    return { network, filesystem, landlockAbi, chromiumSandbox, ...(refused ? { refused } : {}) };
  }

  /**
   * One log line when the mode is decided (and again if Chromium's own sandbox is refused at launch), a warning
   * when converters reach the network or other jobs' files, and the uhp_preview_isolation gauge.
   */
  private reportIsolation(): void {
    const mode = this.mode;
    if (!mode) return;
    const summary = describeIsolation(mode);
    if (summary === this.reportedMode) return;
    this.reportedMode = summary;
    this.metrics.isolation(mode);
    const details = { isolation: this.isolation(), notes: mode.notes };
    if (mode.refused) this.logger.error(details, `preview converters refused: ${summary}`);
    else if (mode.network === 'none' || mode.filesystem === 'none')
      this.logger.warn(
        details,
        `preview converters are not fully isolated (${summary}): the deployment must keep them off the network ` +
          'and away from other jobs (e.g. an egress policy for the preview workers)',
      );
    else this.logger.info(details, `preview converters isolated: ${summary}`);
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
      this.reportIsolation();
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
      this.reportIsolation();
      this.logger.warn({ err: error }, 'could not check or record the preview converters');
    }
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.converters) await (await this.converters.catch(() => null))?.registry.close();
  }
}
