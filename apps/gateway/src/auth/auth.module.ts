import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeyGuard, ApiKeyMiddleware, BootstrapKeys } from './auth';

/** API keys and task tokens: the middleware that knows the caller, the guard on every route, the bootstrap keys. */
@Module({
  providers: [{ provide: APP_GUARD, useClass: ApiKeyGuard }, ApiKeyMiddleware, BootstrapKeys],
  exports: [ApiKeyMiddleware],
})
export class AuthModule {}
