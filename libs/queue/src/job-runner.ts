import { type Job, UnrecoverableError } from 'bullmq';
import { isJobOf, parseJobPayload, type JobPayloads, type JobsOf, type QueueName } from '@app/contracts';
import { requestContext } from '@app/common';

/** A handler for each job of a queue, given the checked payload. */
export type JobHandlers<Q extends QueueName> = {
  [N in JobsOf<Q>]: (payload: JobPayloads[N], job: Job, signal: AbortSignal) => Promise<unknown>;
};

/**
 * Runs a job taken from `queue`: its name must be one of the queue's, its payload must fit the
 * contract (else it fails for good: no retry can fix it), and its handler runs with the request id
 * of the request that queued it. `signal` aborts it (the worker is stopping).
 */
export function runJob<Q extends QueueName>(
  queue: Q,
  handlers: JobHandlers<Q>,
  job: Job,
  signal: AbortSignal,
): Promise<unknown> {
  if (!isJobOf(queue, job.name)) throw new UnrecoverableError(`no handler for job ${job.name} on queue ${queue}`);
  return runHandler(handlers, job.name, job, signal);
}

function runHandler<Q extends QueueName, N extends JobsOf<Q>>(
  handlers: JobHandlers<Q>,
  name: N,
  job: Job,
  signal: AbortSignal,
): Promise<unknown> {
  let payload: JobPayloads[N];
  try {
    payload = parseJobPayload(name, job.data);
  } catch (error) {
    throw new UnrecoverableError((error as Error).message);
  }
  const handler: (payload: JobPayloads[N], job: Job, signal: AbortSignal) => Promise<unknown> = handlers[name];
  return requestContext.run({ requestId: payload.requestId ?? `job:${job.id}` }, () => handler(payload, job, signal));
}
