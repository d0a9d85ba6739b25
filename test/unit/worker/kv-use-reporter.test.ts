import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type KvUse, KvUseReporter } from '../../../src/worker/kv-use-reporter.ts';

describe('KvUseReporter', () => {
  let now: KvUse;
  let posted: KvUse[];
  let reporter: KvUseReporter;
  beforeEach(() => {
    vi.useFakeTimers();
    now = { used: 0, total: 1024 };
    posted = [];
    reporter = new KvUseReporter(
      () => ({ ...now }),
      (u) => posted.push(u),
      250,
    );
  });
  afterEach(() => vi.useRealTimers());

  it('posts the figure at a job start, every period while jobs run, and at the last end; only changes', () => {
    reporter.sample();
    expect(posted).toEqual([{ used: 0, total: 1024 }]);
    now.used = 40;
    reporter.jobStarted();
    expect(posted.at(-1)).toEqual({ used: 40, total: 1024 });
    now.used = 41;
    vi.advanceTimersByTime(250);
    expect(posted.at(-1)).toEqual({ used: 41, total: 1024 });
    const count = posted.length;
    vi.advanceTimersByTime(1000); // unchanged: nothing posted
    expect(posted.length).toBe(count);
    now.used = 90;
    reporter.jobStarted(); // a second job
    reporter.jobEnded();
    now.used = 0;
    reporter.jobEnded();
    expect(posted.at(-1)).toEqual({ used: 0, total: 1024 });
    // Idle: no more sampling.
    const idle = posted.length;
    now.used = 5;
    vi.advanceTimersByTime(5000);
    expect(posted.length).toBe(idle);
  });

  it('an unmatched end neither throws nor leaves a timer behind', () => {
    reporter.jobEnded();
    expect(vi.getTimerCount()).toBe(0);
    reporter.jobStarted();
    expect(vi.getTimerCount()).toBe(1);
    reporter.jobEnded();
    expect(vi.getTimerCount()).toBe(0);
  });
});
