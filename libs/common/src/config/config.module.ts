import { DynamicModule, Global, Module } from '@nestjs/common';
import type { z } from 'zod';
import { loadConfig } from './load-config';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Provides the app's validated config under APP_CONFIG; read it only through that token. */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot<S extends z.ZodType>(schema: S, values?: z.infer<S>): DynamicModule {
    return {
      module: AppConfigModule,
      providers: [{ provide: APP_CONFIG, useFactory: () => values ?? loadConfig(schema) }],
      exports: [APP_CONFIG],
    };
  }
}
