import { Global, Module } from '@nestjs/common';
import { ObjectStager } from './object-stager';
import { TransactionalUnitOfWork, UnitOfWork } from './unit-of-work';

/**
 * An object's life (staged, adopted, referenced, released, purged) for the gateway and the worker.
 * Needs the repositories (DbModule), the object store (ObjectStoreModule) and the job bus (QueueModule).
 */
@Global()
@Module({
  providers: [ObjectStager, { provide: UnitOfWork, useClass: TransactionalUnitOfWork }],
  exports: [ObjectStager, UnitOfWork],
})
export class LifecycleModule {}
