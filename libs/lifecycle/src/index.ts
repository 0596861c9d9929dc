export * from './object-stager';
export * from './unit-of-work';
export * from './lifecycle.module';
