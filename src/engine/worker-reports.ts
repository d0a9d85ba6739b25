import type { Metrics } from '../metrics/metrics.ts';
import type { WorkerReport } from './model-worker-pool.ts';

/**
 * The model workers' own figures, as metrics: each worker reports cumulative counters and gauges of now after a
 * job (model-worker-pool.ts WorkerReport); counters grow by their increase, gauges are summed over the workers.
 * Main thread; one per engine.
 */
export class WorkerReports {
  /** Each worker's last host prompt cache report, by thread id. */
  private readonly promptCaches = new Map<number, { lookups: number; hits: number; bytes: number; entries: number }>();
  /** Each worker's last KV cell report, by thread id. */
  private readonly kvUse = new Map<number, { used: number; total: number }>();
  /** Each native worker's last preemption report, by thread id. */
  private readonly preemptions = new Map<number, { preemptions: number; parked: number }>();

  /** `onParked`: the batch jobs all loops hold parked now (they count as waiting: admission.ts). */
  constructor(
    private readonly metrics: Metrics,
    private readonly labels: { model: string },
    private readonly onParked: (parked: number) => void,
  ) {
    metrics.preemptions.inc(labels, 0);
  }

  record(m: WorkerReport): void {
    if (m.hearth === 'prompt-cache') this.promptCache(m);
    else if (m.hearth === 'kv-cache') this.kvCache(m);
    else this.preempted(m);
  }

  private promptCache(m: Extract<WorkerReport, { hearth: 'prompt-cache' }>): void {
    const last = this.promptCaches.get(m.worker) ?? { lookups: 0, hits: 0, bytes: 0, entries: 0 };
    this.promptCaches.set(m.worker, { lookups: m.lookups, hits: m.hits, bytes: m.bytes, entries: m.entries });
    if (m.lookups > last.lookups) this.metrics.promptCacheLookups.inc(this.labels, m.lookups - last.lookups);
    if (m.hits > last.hits) this.metrics.promptCacheHits.inc(this.labels, m.hits - last.hits);
    let bytes = 0;
    let entries = 0;
    for (const c of this.promptCaches.values()) {
      bytes += c.bytes;
      entries += c.entries;
    }
    this.metrics.promptCacheBytes.set(this.labels, bytes);
    this.metrics.promptCacheEntries.set(this.labels, entries);
  }

  /** The gauge is the cells all workers' running jobs hold over all their cells. */
  private kvCache(m: Extract<WorkerReport, { hearth: 'kv-cache' }>): void {
    this.kvUse.set(m.worker, { used: m.used, total: m.total });
    let used = 0;
    let total = 0;
    for (const w of this.kvUse.values()) {
      used += w.used;
      total += w.total;
    }
    if (total > 0) this.metrics.kvCacheUsage.set(this.labels, used / total);
  }

  private preempted(m: Extract<WorkerReport, { hearth: 'preemptions' }>): void {
    const last = this.preemptions.get(m.worker)?.preemptions ?? 0;
    this.preemptions.set(m.worker, { preemptions: m.preemptions, parked: m.parked });
    if (m.preemptions > last) this.metrics.preemptions.inc(this.labels, m.preemptions - last);
    let parked = 0;
    for (const r of this.preemptions.values()) parked += r.parked;
    this.onParked(parked);
  }
}
