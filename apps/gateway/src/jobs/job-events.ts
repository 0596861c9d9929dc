import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { type Queue, QueueEvents } from 'bullmq';
import { LOGGER, type AppLogger } from '@app/common';
import { QUEUE } from '@app/contracts';

/** What a listener hears: the id of a job that finished (completed, or failed an attempt). */
export type JobFinishedListener = (jobId: string) => void;

/** The source of job-finished events: the port a waiting request listens on, faked in unit specs. */
export abstract class JobEvents {
  abstract onFinished(listener: JobFinishedListener): void;
}

/** How long a listener whose connection never came up waits before it starts again. */
const RESTART_MS = 5_000;

/**
 * BullMQ's own event stream of the preview and archive queues (one QueueEvents, one Redis connection, per
 * queue and gateway process). The worker announces a job completed after its handler returned, so after
 * the row it wrote committed. Events missed while Redis is away are only late or lost: waiters re-read
 * their rows on their own.
 */
@Injectable()
export class QueueJobEvents extends JobEvents implements OnModuleInit, OnApplicationShutdown {
  private readonly listeners: JobFinishedListener[] = [];
  private readonly running = new Set<QueueEvents>();
  private isClosing = false;

  constructor(
    @InjectQueue(QUEUE.preview) private readonly previewQueue: Queue,
    @InjectQueue(QUEUE.archive) private readonly archiveQueue: Queue,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {
    super();
  }

  onFinished(listener: JobFinishedListener): void {
    this.listeners.push(listener);
  }

  /** Not awaited: a gateway starts and serves without Redis. */
  onModuleInit(): void {
    this.listen(this.previewQueue);
    this.listen(this.archiveQueue);
  }

  async onApplicationShutdown(): Promise<void> {
    this.isClosing = true;
    await Promise.all([...this.running].map((events) => events.close()));
  }

  private listen(queue: Queue): void {
    const events = new QueueEvents(queue.name, {
      connection: queue.opts.connection,
      prefix: queue.opts.prefix,
      autorun: false,
    });
    const finished = ({ jobId }: { jobId: string }) => this.finished(jobId);
    events.on('completed', finished);
    events.on('failed', finished);
    events.on('error', (error) => this.logger.warn({ err: error, queue: queue.name }, 'job events: Redis error'));
    this.running.add(events);
    // run() returns only when closed, or at once when its connection never came up: then start over.
    events
      .run()
      .catch((error: unknown) => this.logger.warn({ err: error, queue: queue.name }, 'job events stopped'))
      .finally(() => {
        this.running.delete(events);
        if (this.isClosing) return;
        void events.close().catch(() => undefined);
        setTimeout(() => !this.isClosing && this.listen(queue), RESTART_MS).unref();
      });
  }

  private finished(jobId: string): void {
    for (const listener of this.listeners) listener(jobId);
  }
}
