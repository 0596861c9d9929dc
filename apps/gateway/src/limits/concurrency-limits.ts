import {
  applyDecorators,
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import { ApiError, APP_CONFIG, type GatewayConfig } from '@app/common';
import { isMultipart } from '../http/upload-body';

/** What one principal may have running at once on one gateway process. */
export type ConcurrencyKind = 'uploads' | 'downloads' | 'responses';

/** How long a client refused for concurrency waits before it tries again (the OpenAI SDK honours it). */
export const CONCURRENCY_RETRY_AFTER_SECONDS = 1;

/**
 * Counts each principal's uploads, downloads and running responses on this process. Over a limit the
 * request is answered 429 at once, before a byte of its body is read: one tenant's hundreds of stalled
 * transfers cannot hold the sockets, pools and memory every other tenant needs.
 */
@Injectable()
export class ConcurrencyLimits {
  private readonly running = new Map<string, number>();
  readonly max: Record<ConcurrencyKind, number>;

  constructor(@Inject(APP_CONFIG) config: GatewayConfig) {
    this.max = {
      uploads: config.UHP_MAX_CONCURRENT_UPLOADS,
      downloads: config.UHP_MAX_CONCURRENT_DOWNLOADS,
      responses: config.UHP_MAX_RESPONSES_IN_FLIGHT,
    };
  }

  /** Takes a slot, or throws 429; the returned function gives it back (once, however often called). */
  acquire(principalId: string, kind: ConcurrencyKind): () => void {
    const key = `${kind}:${principalId}`;
    const running = this.running.get(key) ?? 0;
    if (running >= this.max[kind]) {
      throw new ApiError(
        'rate_limited',
        `At most ${this.max[kind]} ${kind} of one principal run at once; try again shortly.`,
        null,
        {
          'retry-after': String(CONCURRENCY_RETRY_AFTER_SECONDS),
        },
      );
    }
    this.running.set(key, running + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.running.get(key) ?? 1) - 1;
      if (left <= 0) this.running.delete(key);
      else this.running.set(key, left);
    };
  }

  /** Slots in use now, for tests and metrics. */
  inUse(principalId: string, kind: ConcurrencyKind): number {
    return this.running.get(`${kind}:${principalId}`) ?? 0;
  }
}

const CONCURRENCY_KIND = 'uhp:concurrencyKind';

@Injectable()
class ConcurrencyInterceptor implements NestInterceptor {
  constructor(
    @Inject(ConcurrencyLimits) private readonly limits: ConcurrencyLimits,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const kind = this.reflector.get<ConcurrencyKind>(CONCURRENCY_KIND, context.getHandler());
    const http = context.switchToHttp();
    const req = http.getRequest<IncomingMessage & { principal?: { id: string } }>();
    // A JSON copy into a container is no upload: only a multipart body streams bytes in.
    const isByteStream =
      isMultipart(req) || /^application\/offset\+octet-stream/i.test(req.headers['content-type'] ?? '');
    if (!req.principal || (kind === 'uploads' && !isByteStream)) return next.handle();
    const release = this.limits.acquire(req.principal.id, kind);
    // Held until the exchange is over: for a download, until its last byte left or the client went.
    http.getResponse<ServerResponse>().once('close', release);
    return next.handle();
  }
}

/** The handler counts against the caller's concurrency limit of `kind` for as long as its exchange lasts. */
export const Concurrency = (kind: ConcurrencyKind) =>
  applyDecorators(SetMetadata(CONCURRENCY_KIND, kind), UseInterceptors(ConcurrencyInterceptor));
