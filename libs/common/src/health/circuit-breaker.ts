import { ApiError } from '../errors/api-error';

/** How often a dependency marked down is probed, and how soon a request's own probe may follow the last one. */
export const PROBE_INTERVAL_MS = 1_000;

export interface CircuitBreakerOptions {
  /** The dependency's name in logs, /healthz and the `uhp_dependency_up` gauge: `s3`, `storage`, `redis`. */
  dependency: string;
  /**
   * One cheap call that succeeds only when the dependency answers (HeadBucket, the storage service's /healthz,
   * PING), bounded by `probeTimeoutMs`. It is sent past the breaker.
   */
  probe: (signal: AbortSignal) => Promise<void>;
  probeTimeoutMs: number;
}

export interface DependencyChange {
  dependency: string;
  isUp: boolean;
  reason?: string;
}

/** A dependency marked down refuses the call before it is sent: the contract's 503, with Retry-After. */
export class DependencyDownError extends ApiError {
  constructor(readonly dependency: string) {
    super('service_unavailable', `A dependency (${dependency}) is unavailable; try again.`);
  }
}

/**
 * Whether a failure says the dependency is down rather than that one call went wrong: it did not answer in
 * time, or nobody listens at its address. A refusal (an answer), a reset keep-alive socket and a caller's
 * abort say nothing of the kind.
 */
export function isDependencyDown(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  if (error instanceof DependencyDownError) return false;
  const { name, code, cause } = error as { name?: unknown; code?: unknown; cause?: unknown };
  if (name === 'AbortError') return false;
  if (name === 'TimeoutError') return true;
  if (typeof code === 'string' && DOWN_CODES.has(code)) return true;
  return isDependencyDown(cause, depth + 1);
}

const DOWN_CODES = new Set([
  'ETIMEDOUT',
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'DEPENDENCY_TIMEOUT',
]);

/** The error of a call bounded by `withTimeout`. */
export class DependencyTimeoutError extends Error {
  readonly code = 'DEPENDENCY_TIMEOUT';
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = 'DependencyTimeoutError';
  }
}

/** Runs `work` with a signal that aborts after `ms`; rejects with DependencyTimeoutError then. */
export async function withTimeout<T>(what: string, ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new DependencyTimeoutError(what, ms);
      controller.abort(error);
      reject(error);
    }, ms);
    timer.unref();
  });
  try {
    return await Promise.race([work(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Fails fast while a dependency is known to be down. A call that times out or finds nobody listening marks it
 * down at once (that call has already waited out its whole bound); from then on calls are refused before they
 * are sent, calls still waiting are told through `downSignal`, and the dependency is probed every second (and by
 * the first call that arrives after a probe interval has passed) until a probe answers and it is up again.
 */
export class CircuitBreaker {
  private down: { since: number } | null = null;
  private probing: Promise<boolean> | null = null;
  private lastProbeAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private upSignalController = new AbortController();
  private readonly listeners: Array<(change: DependencyChange) => void> = [];

  constructor(private readonly options: CircuitBreakerOptions) {}

  get dependency(): string {
    return this.options.dependency;
  }

  /** Tells `listener` of every change (the log). */
  onChange(listener: (change: DependencyChange) => void): void {
    this.listeners.push(listener);
  }

  get isUp(): boolean {
    return this.down === null;
  }

  /** What /healthz says of it: public, so never the failure's text (hosts, ports, driver messages); the log has it. */
  state(): { up: boolean; since?: string } {
    if (!this.down) return { up: true };
    return { up: false, since: new Date(this.down.since).toISOString() };
  }

  /**
   * Aborted when the dependency is marked down: a call in flight that listens gives up at once rather than wait
   * out its own bound. (A signal of its own per period: once aborted a signal stays so.)
   */
  get downSignal(): AbortSignal {
    return this.upSignalController.signal;
  }

  /** Throws DependencyDownError while the dependency is down (and starts a probe when one is due). */
  assertUp(): void {
    if (!this.down) return;
    if (Date.now() - this.lastProbeAt >= PROBE_INTERVAL_MS) void this.probe();
    throw new DependencyDownError(this.dependency);
  }

  /** Runs one call to the dependency: refused while it is down; its failure may mark it down. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    this.assertUp();
    try {
      return await call();
    } catch (error) {
      this.observe(error);
      throw error;
    }
  }

  /** Looks at a call's failure: a dependency that timed out or refused the connection is marked down. */
  observe(error: unknown): void {
    if (isDependencyDown(error)) this.markDown(describe(error));
  }

  /**
   * Probes now (or joins the probe under way) and reports whether the dependency answered; marks it down when it
   * did not, up when it did. For a caller that saw a call stall and wants to know whether to give up on it.
   */
  probe(): Promise<boolean> {
    this.probing ??= (async () => {
      this.lastProbeAt = Date.now();
      try {
        await withTimeout(`${this.dependency} probe`, this.options.probeTimeoutMs, this.options.probe);
        this.markUp();
        return true;
      } catch (error) {
        this.markDown(`probe failed: ${describe(error)}`);
        return false;
      } finally {
        this.probing = null;
      }
    })();
    return this.probing;
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private markDown(reason: string): void {
    if (this.down) return;
    this.down = { since: Date.now() };
    const inFlight = this.upSignalController;
    this.upSignalController = new AbortController();
    inFlight.abort(new DependencyDownError(this.dependency));
    this.timer = setInterval(() => void this.probe(), PROBE_INTERVAL_MS);
    this.timer.unref();
    this.tell({ dependency: this.dependency, isUp: false, reason });
  }

  private markUp(): void {
    if (!this.down) return;
    this.down = null;
    this.close();
    this.tell({ dependency: this.dependency, isUp: true });
  }

  private tell(change: DependencyChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
