export * from './error-codes';
export * from './ids';
export * from './jobs';
export * from './storage-api';
export * from './preview-types';
export * from './archive-manifest';
