import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  CircuitBreaker,
  DependencyDownError,
  DependencyTimeoutError,
  isDependencyDown,
  PROBE_INTERVAL_MS,
  withTimeout,
} from './circuit-breaker';

const timeout = () =>
  Object.assign(new Error('socket timed out after 30000 ms of inactivity'), { name: 'TimeoutError' });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:7480'), { code: 'ECONNREFUSED' });

describe('CircuitBreaker', () => {
  let answers: boolean;
  let probes: number;
  let breaker: CircuitBreaker;
  const changes: Array<{ isUp: boolean }> = [];

  beforeEach(() => {
    vi.useFakeTimers();
    answers = false;
    probes = 0;
    changes.length = 0;
    breaker = new CircuitBreaker({
      dependency: 's3',
      probe: async () => {
        probes++;
        if (!answers) throw timeout();
      },
      probeTimeoutMs: 1_000,
    });
    breaker.onChange((change) => changes.push(change));
  });
  afterEach(() => {
    breaker.close();
    vi.useRealTimers();
  });

  it('passes calls and their failures through while the dependency is up', async () => {
    await expect(breaker.run(async () => 'ok')).resolves.toBe('ok');
    await expect(breaker.run(() => Promise.reject(new Error('NoSuchKey')))).rejects.toThrow('NoSuchKey');
    expect(breaker.isUp).toBe(true);
  });

  it('a timed-out call marks it down: calls are refused before they are sent, calls waiting are told', async () => {
    const waiting = breaker.downSignal;
    await expect(breaker.run(() => Promise.reject(timeout()))).rejects.toThrow(/timed out/);
    expect(breaker.isUp).toBe(false);
    expect(waiting.aborted).toBe(true);
    expect(waiting.reason).toBeInstanceOf(DependencyDownError);
    const sent = vi.fn(async () => 'sent');
    const refusal = await breaker.run(sent).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(DependencyDownError);
    expect((refusal as DependencyDownError).status).toBe(503);
    expect(sent).not.toHaveBeenCalled();
    expect(breaker.state()).toEqual({ up: false, since: expect.any(String) });
    expect(changes).toEqual([expect.objectContaining({ isUp: false, reason: expect.stringContaining('timed out') })]);
  });

  it('is probed every interval while down, and up again once a probe answers', async () => {
    breaker.observe(refused());
    await vi.advanceTimersByTimeAsync(3 * PROBE_INTERVAL_MS);
    expect(probes).toBe(3);
    expect(breaker.isUp).toBe(false);
    answers = true;
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(breaker.isUp).toBe(true);
    expect(breaker.downSignal.aborted).toBe(false);
    await expect(breaker.run(async () => 'ok')).resolves.toBe('ok');
    await vi.advanceTimersByTimeAsync(5 * PROBE_INTERVAL_MS);
    expect(probes).toBe(4); // no probing while up
    expect(changes.map((change) => change.isUp)).toEqual([false, true]);
  });

  it('the first call after a probe interval starts a probe itself', async () => {
    breaker.observe(timeout());
    vi.setSystemTime(Date.now() + PROBE_INTERVAL_MS);
    expect(() => breaker.assertUp()).toThrow(DependencyDownError);
    expect(probes).toBe(1);
  });

  it('a caller abort, a reset socket or an answer does not mark it down', () => {
    breaker.observe(Object.assign(new Error('aborted'), { name: 'AbortError' }));
    breaker.observe(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    breaker.observe(
      Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } }),
    );
    breaker.observe(new DependencyDownError('storage'));
    expect(breaker.isUp).toBe(true);
  });
});

describe('isDependencyDown', () => {
  it('knows the timeouts and refusals of the SDK, undici, ioredis bounds and ours, also as a cause', () => {
    expect(isDependencyDown(timeout())).toBe(true);
    expect(isDependencyDown(refused())).toBe(true);
    expect(isDependencyDown({ code: 'UND_ERR_HEADERS_TIMEOUT' })).toBe(true);
    expect(isDependencyDown(new DependencyTimeoutError('redis enqueue', 5))).toBe(true);
    expect(isDependencyDown(new Error('wrapped', { cause: refused() }))).toBe(true);
    expect(isDependencyDown(new Error('NoSuchKey'))).toBe(false);
  });
});

describe('withTimeout', () => {
  it('rejects with DependencyTimeoutError and aborts the work when the bound passes', async () => {
    let signal: AbortSignal | undefined;
    const work = withTimeout('redis enqueue', 20, (s) => {
      signal = s;
      return new Promise(() => undefined);
    });
    await expect(work).rejects.toBeInstanceOf(DependencyTimeoutError);
    expect(signal?.aborted).toBe(true);
  });

  it('passes a result that comes in time', async () => {
    await expect(withTimeout('x', 1_000, async () => 7)).resolves.toBe(7);
  });
});
