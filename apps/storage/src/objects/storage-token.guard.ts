import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ApiError, APP_CONFIG, IS_PUBLIC, type StorageConfig } from '@app/common';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** The internal API answers only callers that hold STORAGE_TOKEN (the gateway and the worker). */
@Injectable()
export class StorageTokenGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor(
    @Inject(APP_CONFIG) config: StorageConfig,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {
    this.expected = digest(config.STORAGE_TOKEN);
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const header = context.switchToHttp().getRequest<IncomingMessage>().headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (token && timingSafeEqual(digest(token), this.expected)) return true;
    throw new ApiError('invalid_api_key', 'A valid storage token is required.');
  }
}
