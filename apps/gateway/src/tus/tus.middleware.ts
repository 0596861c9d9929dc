import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, APP_CONFIG, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';
import { TUS_CHECKSUM_ALGORITHMS, TUS_EXTENSIONS, TUS_VERSION } from './tus-protocol';

/**
 * Runs before CORS and the key check: every answer under /v1/tus, a 401 included, carries Tus-Resumable, and an
 * OPTIONS (tus discovery, or a browser's preflight: the same request to tus) gets the server's tus capabilities,
 * which CorsMiddleware then sends with its 204.
 */
@Injectable()
export class TusDiscoveryMiddleware implements NestMiddleware {
  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {}

  use(req: IncomingMessage, res: ServerResponse, next: () => void): void {
    res.setHeader('tus-resumable', TUS_VERSION);
    if (req.method === 'OPTIONS') {
      res.setHeader('tus-version', TUS_VERSION);
      res.setHeader('tus-extension', TUS_EXTENSIONS);
      res.setHeader('tus-max-size', String(effectiveLimitsOf(this.config).maxUploadBytes));
      res.setHeader('tus-checksum-algorithm', TUS_CHECKSUM_ALGORITHMS.join(','));
    }
    next();
  }
}

/** After the key check: any tus request but OPTIONS must say Tus-Resumable: 1.0.0, else 412. */
@Injectable()
export class TusHeadersMiddleware implements NestMiddleware {
  use(req: IncomingMessage, res: ServerResponse, next: () => void): void {
    if (req.headers['tus-resumable'] !== TUS_VERSION) {
      res.setHeader('tus-version', TUS_VERSION);
      throw new ApiError('tus_version_unsupported', `Send Tus-Resumable: ${TUS_VERSION}.`, 'Tus-Resumable');
    }
    next();
  }
}
