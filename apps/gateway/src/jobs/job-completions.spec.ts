import { describe, expect, it } from 'vitest';
import { FakeJobEvents } from '../../../../test/fakes/gateway';
import { JobCompletions } from './job-completions';

const HOUR_MS = 3_600_000;
const never = () => false;

function completions(fallbackMs = HOUR_MS) {
  const events = new FakeJobEvents();
  return { events, completions: new JobCompletions(events, { JOB_WAIT_FALLBACK_MS: fallbackMs }) };
}

/** A row that turns final when `finish` is called; counts its reads. */
function row() {
  const state = { reads: 0, value: undefined as string | undefined };
  return {
    state,
    check: async () => {
      state.reads += 1;
      return state.value;
    },
  };
}

const tick = (ms = 20) => new Promise((resolve) => setTimeout(resolve, ms));

describe('JobCompletions', () => {
  it('wakes a waiter when its job finishes, reads the row, and forgets the waiter', async () => {
    const { events, completions: jobs } = completions();
    const { state, check } = row();
    const started = Date.now();
    const waiting = jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: never, check });
    await tick();
    expect(state.reads).toBe(1);
    expect(jobs.waiting).toBe(1);
    state.value = 'ready';
    events.finish('job-1');
    await expect(waiting).resolves.toBe('ready');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(jobs.waiting).toBe(0);
  });

  it('answers at once when the row is final before any event (the job finished before the wait began)', async () => {
    const { completions: jobs } = completions();
    await expect(jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: never, check: async () => 'done' })).resolves.toBe(
      'done',
    );
    expect(jobs.waiting).toBe(0);
  });

  it("is not woken by another job's event; every waiter of the same job is", async () => {
    const { events, completions: jobs } = completions();
    const { state, check } = row();
    const waiting = [1, 2].map(() => jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: never, check }));
    await tick();
    expect(state.reads).toBe(2);
    events.finish('job-2');
    await tick();
    expect(state.reads).toBe(2);
    state.value = 'ready';
    events.finish('job-1');
    await expect(Promise.all(waiting)).resolves.toEqual(['ready', 'ready']);
    expect(jobs.waiting).toBe(0);
  });

  it('an event whose row is not final yet (a retried attempt) keeps the waiter waiting', async () => {
    const { events, completions: jobs } = completions();
    const { state, check } = row();
    const waiting = jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: never, check });
    await tick();
    events.finish('job-1');
    await tick(400);
    expect(state.reads).toBeGreaterThanOrEqual(2);
    expect(jobs.waiting).toBe(1);
    state.value = 'failed';
    events.finish('job-1');
    await expect(waiting).resolves.toBe('failed');
  });

  it('a lost event only delays: the row is re-read every fallback interval', async () => {
    const { completions: jobs } = completions(50);
    const { state, check } = row();
    const waiting = jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: never, check });
    await tick();
    state.value = 'ready';
    await expect(waiting).resolves.toBe('ready');
    expect(state.reads).toBeGreaterThanOrEqual(2);
    expect(jobs.waiting).toBe(0);
  });

  it('a row that commits during a read is read again when the event came meanwhile', async () => {
    const { events, completions: jobs } = completions();
    let reads = 0;
    const check = async () => {
      reads += 1;
      if (reads === 1) events.finish('job-1'); // the event arrives while the first read is under way
      return reads === 2 ? 'ready' : undefined;
    };
    await expect(jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: never, check })).resolves.toBe('ready');
  });

  it('gives up at the timeout and when the client goes away, and forgets the waiter either way', async () => {
    const { completions: jobs } = completions();
    const { check } = row();
    await expect(jobs.waitFor('job-1', { timeoutMs: 100, isGone: never, check })).resolves.toBeUndefined();
    expect(jobs.waiting).toBe(0);

    let gone = false;
    const started = Date.now();
    const waiting = jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: () => gone, check });
    await tick();
    expect(jobs.waiting).toBe(1);
    gone = true;
    await expect(waiting).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(jobs.waiting).toBe(0);
  });

  it('a read that fails ends the wait with its error and forgets the waiter', async () => {
    const { completions: jobs } = completions();
    const check = async () => {
      throw new Error('session deleted');
    };
    await expect(jobs.waitFor('job-1', { timeoutMs: HOUR_MS, isGone: never, check })).rejects.toThrow(
      'session deleted',
    );
    expect(jobs.waiting).toBe(0);
  });
});
