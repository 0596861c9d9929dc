import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type GatewayConfig } from '@app/common';
import { JobEvents } from './job-events';

/** What a request waits for: its row, re-read after each wake-up; the event itself decides nothing. */
export interface CompletionWait<T> {
  /** The longest wait. */
  timeoutMs: number;
  /** The client hung up: stop waiting. */
  isGone(): boolean;
  /** Reads the row: the answer once it is final, undefined while the job goes on. */
  check(): Promise<T | undefined>;
}

/** `isGone` is a flag, not an event: it is looked at this often (no I/O). */
const GONE_CHECK_MS = 100;
/**
 * A wake-up that finds the row unchanged (an attempt failed and will be retried, or a worker that marks its
 * row after announcing) looks once more this soon.
 */
const SETTLE_MS = 250;

type Wake = () => void;

/**
 * The requests of this gateway process waiting for jobs, keyed by job id, woken by the one job-events
 * listener; each also re-reads its row every JOB_WAIT_FALLBACK_MS, so a lost event only delays it.
 */
@Injectable()
export class JobCompletions {
  private readonly waiters = new Map<string, Set<Wake>>();

  constructor(
    @Inject(JobEvents) events: JobEvents,
    @Inject(APP_CONFIG) private readonly config: Pick<GatewayConfig, 'JOB_WAIT_FALLBACK_MS'>,
  ) {
    events.onFinished((jobId) => this.waiters.get(jobId)?.forEach((wake) => wake()));
  }

  /** Requests waiting now: every ended wait leaves none behind. */
  get waiting(): number {
    let count = 0;
    for (const wakes of this.waiters.values()) count += wakes.size;
    return count;
  }

  /**
   * Checks the row until `check` answers, the timeout passes or the client goes away (then undefined);
   * between checks it sleeps until job `jobId` finishes, or the fallback interval passes.
   */
  async waitFor<T>(jobId: string, wait: CompletionWait<T>): Promise<T | undefined> {
    const deadline = Date.now() + wait.timeoutMs;
    const sleeper = new Sleeper();
    this.add(jobId, sleeper.wake);
    try {
      let nextMs = 0;
      while (Date.now() < deadline && !wait.isGone()) {
        if (nextMs > 0) await sleeper.sleep(Math.min(nextMs, deadline - Date.now()), wait.isGone);
        const wasWoken = sleeper.takeWoken();
        const answer = await wait.check();
        if (answer !== undefined) return answer;
        // An event during the check may have come after the read: read again at once.
        nextMs = sleeper.hasWoken() ? 0 : wasWoken ? SETTLE_MS : this.config.JOB_WAIT_FALLBACK_MS;
      }
      return undefined;
    } finally {
      this.remove(jobId, sleeper.wake);
    }
  }

  private add(jobId: string, wake: Wake): void {
    const wakes = this.waiters.get(jobId) ?? new Set<Wake>();
    wakes.add(wake);
    this.waiters.set(jobId, wakes);
  }

  private remove(jobId: string, wake: Wake): void {
    const wakes = this.waiters.get(jobId);
    wakes?.delete(wake);
    if (wakes?.size === 0) this.waiters.delete(jobId);
  }
}

/** One waiter's sleep: ends when woken, when `ms` pass, or when the client is gone. */
class Sleeper {
  private isWoken = false;
  private end: (() => void) | undefined;

  readonly wake = (): void => {
    this.isWoken = true;
    this.end?.();
  };

  hasWoken(): boolean {
    return this.isWoken;
  }

  /** Whether a wake-up came since the last call, and forgets it. */
  takeWoken(): boolean {
    const was = this.isWoken;
    this.isWoken = false;
    return was;
  }

  sleep(ms: number, isGone: () => boolean): Promise<void> {
    if (this.isWoken) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.end?.(), ms);
      const goneCheck = setInterval(() => isGone() && this.end?.(), GONE_CHECK_MS);
      this.end = () => {
        clearTimeout(timer);
        clearInterval(goneCheck);
        this.end = undefined;
        resolve();
      };
    });
  }
}
