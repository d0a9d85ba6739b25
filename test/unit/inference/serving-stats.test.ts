import { describe, expect, it } from 'vitest';
import type { GenerationSink } from '../../../src/engine/generation.ts';
import { ApiError } from '../../../src/errors/index.ts';
import { ServingStats } from '../../../src/inference/serving-stats.ts';
import { instantModelStatus } from '../../helpers/unit-model-status.ts';

const status = instantModelStatus({ contextSize: 256, slots: 2, readyAt: 0 });
const engine = { modelId: 'local/m', status: () => status, load: () => ({ running: 1, waiting: 2 }) };
const sink: GenerationSink = { onText: () => {}, onDone: () => {}, onError: () => {} };

describe('ServingStats', () => {
  it('summarizes finished generations: ttft percentiles, tokens per second, errors; cancelled ones record nothing', () => {
    const stats = new ServingStats(engine);
    const t = performance.now();
    for (let i = 1; i <= 20; i++) {
      const s = stats.observe(sink, t - i * 10); // ttft about i*10 ms
      s.onText('x');
      s.onDone({ finishReason: 'stop', promptTokens: 3, cachedTokens: 0, completionTokens: 6 });
    }
    stats
      .observe(sink)
      .onError(new ApiError({ status: 500, type: 'server_error', message: 'boom', code: null, param: null }));
    stats.observe(sink).onText('never finishes'); // cancelled: no onDone / onError
    const snap = stats.snapshot();
    expect(snap.requests).toEqual({ running: 1, waiting: 2 });
    expect(snap.model).toMatchObject({
      id: 'local/m',
      state: 'ready',
      engine: 'instant',
      workers: { ready: 1, total: 1 },
      pull: null,
    });
    expect(snap.window).toMatchObject({
      seconds: 60,
      requests: 21,
      errors: 1,
      promptTokens: 60,
      completionTokens: 120,
      tokensPerSecond: 2,
    });
    expect(snap.window.ttftMs.p50).toBeGreaterThanOrEqual(100);
    expect(snap.window.ttftMs.p95).toBeGreaterThanOrEqual(190);
    expect(snap.window.ttftMs.p95!).toBeGreaterThan(snap.window.ttftMs.p50!);
    expect(snap.series).toHaveLength(30);
    expect(snap.series.reduce((n, b) => n + b.requests, 0)).toBe(21);
  });

  it('forgets figures older than five minutes', () => {
    const stats = new ServingStats(engine);
    stats.observe(sink).onDone({ finishReason: 'stop', promptTokens: 1, cachedTokens: 0, completionTokens: 1 });
    expect(stats.snapshot().window.requests).toBe(1);
    const later = stats.snapshot(Date.now() + 6 * 60_000);
    expect(later.window.requests).toBe(0);
    expect(later.series.every((b) => b.requests === 0 && b.ttftMs.p50 === null)).toBe(true);
  });
});
