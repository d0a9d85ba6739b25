import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BoundCounter, BoundHistogram } from '../../../src/metrics/bound-metrics.ts';

/**
 * Bound counters and histograms expose exactly what prom-client's own would for the same updates: same lines,
 * label escaping, bucket bounds (`le` first, cumulative, +Inf), sums and counts; in text and in JSON.
 */
describe('bound metrics', () => {
  const buckets = [0.005, 0.05, 0.5, 5];
  // Values on, between, below and above the bounds; deterministic.
  const values = [0, 0.005, 0.0051, 0.05, 0.3, 0.5, 4.99, 5, 5.01, 120, 0.04];
  const series = [
    { route: 'models', status: '200' },
    { route: 'chat "completions"\\x\n', status: '429' },
  ];

  /** One counter and one histogram, each declared with the same options in both libraries. */
  const counter = { name: 't_total', help: 'a "help"\\ line', labelNames: ['route', 'status'] };
  const histogram = { name: 't_seconds', help: 'h', labelNames: ['route', 'status'], buckets };

  function both() {
    const theirs = new Registry();
    const ours = new Registry();
    const pc = new Counter({ ...counter, registers: [theirs] });
    const ph = new Histogram({ ...histogram, registers: [theirs] });
    const bc = new BoundCounter({ ...counter, registers: [ours] });
    const bh = new BoundHistogram({ ...histogram, registers: [ours] });
    return { theirs, ours, pc, ph, bc, bh };
  }

  it('expose the same text and JSON as prom-client for the same updates', async () => {
    const { theirs, ours, pc, ph, bc, bh } = both();
    for (const labels of series) {
      const count = bc.bind(labels);
      const duration = bh.bind(labels);
      for (const v of values) {
        pc.inc(labels);
        count.inc();
        ph.observe(labels, v);
        duration.observe(v);
      }
      pc.inc(labels, 3);
      bc.inc(labels, 3);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    expect(await ours.metrics()).toContain('t_seconds_bucket{le="0.005",route="models",status="200"} 2');
  });

  it('a series bound twice is one series; reset zeroes it and the bound handle still counts', async () => {
    const { ours, bc } = both();
    const a = bc.bind(series[0]!);
    const b = bc.bind({ status: '200', route: 'models' });
    a.inc();
    b.inc(2);
    expect(await ours.getSingleMetricAsString('t_total')).toContain('t_total{route="models",status="200"} 3');
    ours.resetMetrics();
    a.inc();
    expect(await ours.getSingleMetricAsString('t_total')).toContain('t_total{route="models",status="200"} 1');
  });

  it('refuses labels other than its own, and leaves out values that are not finite', async () => {
    const { ours, bc, bh } = both();
    expect(() => bc.bind({ route: 'models' })).toThrow(/labels must be exactly route, status/);
    expect(() => bc.bind({ route: 'models', status: '200', extra: 'x' })).toThrow(/labels must be exactly/);
    const h = bh.bind(series[0]!);
    h.observe(Number.NaN);
    h.observe(Number.POSITIVE_INFINITY);
    h.observe(1);
    expect(await ours.getSingleMetricAsString('t_seconds')).toContain('t_seconds_count{route="models",status="200"} 1');
  });
});
