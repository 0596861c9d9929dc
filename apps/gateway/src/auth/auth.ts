import {
  type CanActivate,
  createParamDecorator,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestMiddleware,
  type OnApplicationBootstrap,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { IncomingMessage } from 'node:http';
import { ApiError, APP_CONFIG, IS_PUBLIC, LOGGER, type AppLogger, type GatewayConfig } from '@app/common';
import { PrincipalRepository, ResponseRepository, type TaskScope } from '@app/db';
import { apiKeyPrefix, hashApiKey, parseBootstrapKeys, TASK_TOKEN_PREFIX } from './api-key';

type AuthedRequest = IncomingMessage & { principal?: { id: string }; task?: TaskScope };

/** Who is calling: a principal by API key, or an agent holding a task token of that principal. */
export interface Caller {
  principalId: string;
  /** Set for a task token: the calls it may make are limited to this scope. */
  task: TaskScope | null;
}

const BEARER = /^Bearer ([\x21-\x7e]{1,256})$/;

/**
 * The only paths answered without a key, spelled exactly so (routing is case sensitive). Any other
 * spelling of them, and every other path, known or not, needs a key.
 */
export const PUBLIC_PATHS = new Set(['/healthz', '/readyz', '/metrics', '/v1/limits', '/openapi.json', '/docs']);

/**
 * Resolves `Authorization: Bearer <key>` to its principal from the headers alone, before routing and
 * before any byte of a body is read: a request without a valid key is answered 401 at once — an unknown
 * route or id included, so it cannot tell 404 from 401 — and its body is only drained, within the drain
 * budget, never parsed.
 */
@Injectable()
export class ApiKeyMiddleware implements NestMiddleware {
  constructor(
    @Inject(PrincipalRepository) private readonly principals: PrincipalRepository,
    @Inject(ResponseRepository) private readonly responses: ResponseRepository,
  ) {}

  async use(req: AuthedRequest, _res: unknown, next: () => void): Promise<void> {
    const match = BEARER.exec(req.headers.authorization ?? '');
    if (match?.[1].startsWith(TASK_TOKEN_PREFIX)) {
      const task = await this.responses.findTaskScope(hashApiKey(match[1]));
      if (task) {
        req.task = task;
        req.principal = { id: task.principalId };
      }
    } else if (match) {
      req.principal = (await this.principals.findByKeyHash(hashApiKey(match[1]))) ?? undefined;
    }
    // originalUrl: a mounted middleware sees req.url relative to its mount point.
    const path = ((req as AuthedRequest & { originalUrl?: string }).originalUrl ?? req.url ?? '').split('?')[0];
    if (!req.principal && !PUBLIC_PATHS.has(path)) throw invalidKey();
    next();
  }
}

const invalidKey = () =>
  new ApiError('invalid_api_key', 'Missing or unknown API key. Send Authorization: Bearer <key>.');

const TASK_SCOPED = 'uhp:taskScoped';
/**
 * Marks a handler a task token may call. Such handlers take the @CallerOf() and must keep the call
 * inside `caller.task` (its container, its input files).
 */
export const TaskScoped = () => SetMetadata(TASK_SCOPED, true);

/**
 * Routes not marked @Public() need the principal the middleware resolved; task tokens only reach @TaskScoped() ones.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(@Inject(Reflector) private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    if (!req.principal) throw invalidKey();
    if (req.task && !this.reflector.getAllAndOverride<boolean>(TASK_SCOPED, targets)) {
      throw new ApiError(
        'invalid_api_key',
        "A task token only reads its response's input files and reads and writes its container's files.",
      );
    }
    return true;
  }
}

/** The caller of a @TaskScoped() handler: the principal, and the task scope when it holds a task token. */
export const CallerOf = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  const req = context.switchToHttp().getRequest<AuthedRequest>();
  if (!req.principal) throw new ApiError('invalid_api_key', 'Missing or unknown API key.');
  return { principalId: req.principal.id, task: req.task ?? null };
});

/** The authenticated principal's id; handlers pass it to every repository call. */
export const PrincipalId = createParamDecorator((_data: unknown, context: ExecutionContext): string => {
  const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new ApiError('invalid_api_key', 'Missing or unknown API key.');
  return principal.id;
});

/** Creates the principals and keys of UHP_API_KEYS at start (idempotent), and revokes those it dropped. */
@Injectable()
export class BootstrapKeys implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(PrincipalRepository) private readonly principals: PrincipalRepository,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** The environment is the authority on its keys: listed ones work, ones it no longer lists stop working. */
  async onApplicationBootstrap(): Promise<void> {
    const keys = parseBootstrapKeys(this.config.UHP_API_KEYS);
    for (const { principal, key } of keys) {
      await this.principals.ensureKey(principal, hashApiKey(key), apiKeyPrefix(key), 'UHP_API_KEYS', 'bootstrap');
      this.logger.info({ principal, keyPrefix: apiKeyPrefix(key) }, 'bootstrap API key ready');
    }
    const revoked = await this.principals.revokeBootstrapKeysExcept(keys.map(({ key }) => hashApiKey(key)));
    if (revoked > 0) this.logger.warn({ revoked }, 'bootstrap API keys no longer in UHP_API_KEYS revoked');
    // A fresh installation answers every /v1 call 401 until someone makes a key: say how, once, at start.
    if ((await this.principals.countLiveKeys()) === 0)
      this.logger.warn(
        'no API key exists yet, so every /v1 request is refused 401; create one with ' +
          '`npm run keys -- create <principal>` or list one in UHP_API_KEYS',
      );
  }
}
