// The job queues (BullMQ, Redis): for the gateway and the worker only. A library of its own so that the
// storage service, which queues nothing, never loads a queue client.
export * from './job-bus';
export * from './job-runner';
export * from './queue.module';
