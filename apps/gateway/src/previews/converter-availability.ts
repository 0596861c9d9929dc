import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type GatewayConfig } from '@app/common';
import { CONVERTER_OF_KIND, supportedExtensions, type PreviewKind } from '@app/contracts';
import { ConverterStatusRepository } from '@app/db';

/** Converter availability as the workers last recorded it is re-read at most this often. */
const CACHE_MS = 5_000;
/** A converter no worker has vouched for within this long counts as not installed. */
const MAX_AGE_MS = 24 * 3600 * 1000;

/** Which preview families some worker can convert now: drives the 501 and the formats in /v1/limits. */
@Injectable()
export class ConverterAvailability {
  private cached: { at: number; names: Promise<Set<string>> } | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(ConverterStatusRepository) private readonly converters: ConverterStatusRepository,
  ) {}

  async canConvert(kind: PreviewKind): Promise<boolean> {
    return (await this.available()).has(CONVERTER_OF_KIND[kind]);
  }

  /** The extensions some worker can preview now; none when previews are off. */
  async formats(): Promise<string[]> {
    if (!this.config.PREVIEW_ENABLED) return [];
    const available = await this.available();
    const byKind = supportedExtensions();
    return (Object.keys(byKind) as PreviewKind[])
      .filter((kind) => available.has(CONVERTER_OF_KIND[kind]))
      .flatMap((kind) => byKind[kind])
      .sort();
  }

  private available(): Promise<Set<string>> {
    if (!this.cached || Date.now() - this.cached.at > CACHE_MS) {
      const names = this.converters.available(MAX_AGE_MS);
      this.cached = { at: Date.now(), names };
      // Nothing found is not cached: a worker that has just started is about to record its converters.
      names.then((found) => found.size === 0 && (this.cached = null)).catch(() => (this.cached = null));
    }
    return this.cached.names;
  }
}
