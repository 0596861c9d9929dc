import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, APP_CONFIG, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';
import { Inject } from '@nestjs/common';
import { TUS_CHECKSUM_ALGORITHMS, TUS_CORS_HEADERS, TUS_EXTENSIONS, TUS_VERSION } from './tus-protocol';

/**
 * Runs before the key check: every answer under /v1/tus, a 401 included, carries Tus-Resumable and the
 * CORS headers a browser client needs to read it; OPTIONS is answered here (a CORS preflight carries no key).
 */
@Injectable()
export class TusCorsMiddleware implements NestMiddleware {
  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {}

  use(req: IncomingMessage, res: ServerResponse, next: () => void): void {
    res.setHeader('tus-resumable', TUS_VERSION);
    for (const [name, value] of Object.entries(TUS_CORS_HEADERS)) res.setHeader(name, value);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'tus-version': TUS_VERSION,
        'tus-extension': TUS_EXTENSIONS,
        'tus-max-size': String(effectiveLimitsOf(this.config).maxUploadBytes),
        'tus-checksum-algorithm': TUS_CHECKSUM_ALGORITHMS.join(','),
      });
      res.end();
      return;
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
