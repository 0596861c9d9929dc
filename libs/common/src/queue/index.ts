// The queue side of the platform (BullMQ, Redis): for the gateway and the worker only. Kept out of the
// '@app/common' barrel so that the storage service, which queues nothing, never loads a queue client.
export * from './job-bus';
export * from './job-runner';
export * from './platform-io.module';
