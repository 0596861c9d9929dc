import 'reflect-metadata';
import { runService, storageConfigSchema } from '@app/common';
import { StorageModule } from './storage.module';

runService({
  name: 'storage',
  schema: storageConfigSchema,
  module: () => StorageModule,
  port: (config) => config.STORAGE_PORT,
});
