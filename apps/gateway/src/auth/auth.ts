import { type CanActivate, createParamDecorator, type ExecutionContext, Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { IncomingMessage } from 'node:http';
import { ApiError, APP_CONFIG, IS_PUBLIC, LOGGER, type AppLogger, type GatewayConfig } from '@app/common';
import { PrincipalRepository, type PrincipalRow } from '@app/db';
import { apiKeyPrefix, hashApiKey, parseBootstrapKeys } from './api-key';

type AuthedRequest = IncomingMessage & { principal?: PrincipalRow };

const BEARER = /^Bearer ([\x21-\x7e]{1,256})$/;

/** Every route needs `Authorization: Bearer <key>` unless marked @Public(); 401 comes before any 404. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(PrincipalRepository) private readonly principals: PrincipalRepository,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const match = BEARER.exec(req.headers.authorization ?? '');
    const principal = match ? await this.principals.findByKeyHash(hashApiKey(match[1])) : null;
    if (!principal) throw new ApiError('invalid_api_key', 'Missing or unknown API key. Send Authorization: Bearer <key>.');
    req.principal = principal;
    return true;
  }
}

/** The authenticated principal's id; handlers pass it to every repository call. */
export const PrincipalId = createParamDecorator((_data: unknown, context: ExecutionContext): string => {
  const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new ApiError('invalid_api_key', 'Missing or unknown API key.');
  return principal.id;
});

/** Creates the principals and keys of UHP_API_KEYS at start (idempotent). */
@Injectable()
export class BootstrapKeys implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(PrincipalRepository) private readonly principals: PrincipalRepository,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const { principal, key } of parseBootstrapKeys(this.config.UHP_API_KEYS)) {
      await this.principals.ensureKey(principal, hashApiKey(key), apiKeyPrefix(key), 'UHP_API_KEYS');
      this.logger.info({ principal, keyPrefix: apiKeyPrefix(key) }, 'bootstrap API key ready');
    }
  }
}
