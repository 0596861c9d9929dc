import 'reflect-metadata';
import { runService, workerConfigSchema } from '@app/common';
import { WorkerModule } from './worker.module';

/**
 * The worker serves only /healthz, /readyz and /metrics over HTTP; its work comes from the queues it
 * consumes (WORKER_QUEUES).
 */
runService({
  name: 'worker',
  schema: workerConfigSchema,
  module: (config) => WorkerModule.forRoles(config),
  port: (config) => config.WORKER_PORT,
});
