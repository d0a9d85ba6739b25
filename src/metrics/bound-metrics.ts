import type { Metric, Registry } from 'prom-client';

/**
 * Counters and histograms for the per-request path: a series is bound once to its label values (`bind`) and
 * then updated with plain arithmetic. prom-client's labelled `inc` / `observe` validate and hash the labels on
 * every call (0.7 us a request for one counter and one histogram, measured). The registry reads these at scrape
 * time through prom-client's metric interface (name, help, type, get()), so the exposition is prom-client's:
 * the same lines, escaping and order of labels (`le` first) as its own Counter and Histogram.
 * Label values come from closed sets (metrics.ts): a bound series is never dropped.
 */
type Labels = Record<string, string>;
interface ExportedValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
  exemplar?: null;
}
interface Exported {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: ExportedValue[];
  aggregator: 'sum';
}

interface MetricConfig {
  name: string;
  help: string;
  labelNames: readonly string[];
  registers: Registry[];
}

abstract class BoundMetric<Series> {
  readonly name: string;
  readonly help: string;
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum' as const;
  private readonly labelNames: readonly string[];
  /** Bound series by their label values, in first-bound order. */
  protected readonly series = new Map<string, { labels: Labels; data: Series }>();

  constructor(config: MetricConfig) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series for these label values (every label name, no other), created at its first bind. */
  protected seriesFor(labels: Labels): Series {
    const names = Object.keys(labels);
    if (names.length !== this.labelNames.length || !this.labelNames.every((n) => typeof labels[n] === 'string')) {
      throw new Error(`${this.name}: labels must be exactly ${this.labelNames.join(', ')}`);
    }
    const key = this.labelNames.map((n) => labels[n]).join('\u0000');
    let entry = this.series.get(key);
    if (entry === undefined) {
      entry = { labels: { ...labels }, data: this.newSeries() };
      this.series.set(key, entry);
    }
    return entry.data;
  }

  protected abstract newSeries(): Series;
  protected abstract values(): ExportedValue[];

  /** Zeroes every series (prom-client's Registry.resetMetrics); bound series stay bound. */
  reset(): void {
    for (const entry of this.series.values()) Object.assign(entry.data as object, this.newSeries());
  }

  async get(): Promise<Exported> {
    return { name: this.name, help: this.help, type: this.type, values: this.values(), aggregator: this.aggregator };
  }
}

export class BoundCounter extends BoundMetric<{ value: number }> {
  readonly type = 'counter' as const;

  bind(labels: Labels): { inc(by?: number): void } {
    const s = this.seriesFor(labels);
    return {
      inc(by = 1) {
        s.value += by;
      },
    };
  }

  /** Counts once for these labels (binds on the way: for occasional series such as error codes). */
  inc(labels: Labels, by = 1): void {
    this.seriesFor(labels).value += by;
  }

  protected newSeries() {
    return { value: 0 };
  }

  protected values(): ExportedValue[] {
    return [...this.series.values()].map(({ labels, data }) => ({ value: data.value, labels }));
  }
}

export class BoundHistogram extends BoundMetric<{ counts: Float64Array; sum: number; count: number }> {
  readonly type = 'histogram' as const;
  private readonly upperBounds: readonly number[];

  constructor(config: MetricConfig & { buckets: readonly number[] }) {
    super(config);
    this.upperBounds = [...config.buckets].sort((a, b) => a - b);
  }

  bind(labels: Labels): { observe(value: number): void } {
    const s = this.seriesFor(labels);
    const bounds = this.upperBounds;
    return {
      /** A value that is not finite is not counted. */
      observe(value: number) {
        if (!Number.isFinite(value)) return;
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        s.counts[i]!++; // i === bounds.length: above every bound (+Inf only)
        s.sum += value;
        s.count++;
      },
    };
  }

  protected newSeries() {
    return { counts: new Float64Array(this.upperBounds.length + 1), sum: 0, count: 0 };
  }

  protected values(): ExportedValue[] {
    const out: ExportedValue[] = [];
    for (const { labels, data } of this.series.values()) {
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += data.counts[i]!;
        out.push({ value: cumulative, labels: { le, ...labels }, metricName: `${this.name}_bucket`, exemplar: null });
      });
      out.push({
        value: data.count,
        labels: { le: '+Inf', ...labels },
        metricName: `${this.name}_bucket`,
        exemplar: null,
      });
      out.push({ value: data.sum, labels, metricName: `${this.name}_sum` });
      out.push({ value: data.count, labels, metricName: `${this.name}_count` });
    }
    return out;
  }
}
