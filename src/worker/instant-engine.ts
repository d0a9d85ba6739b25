import type { SlotEngine, SlotJob, SlotJobEvents, SlotJobHandle } from './slot-engine.ts';
import { StopDetector } from './stop-detector.ts';

/**
 * A test engine with no model math, enabled only by `--engine instant`: every step (one macrotask) gives
 * each active job its next `tokensPerStep` tokens of a fixed word cycle, so benchmarks measure what the
 * gateway, the worker port and the SSE writer can carry. Deterministic: job output depends only on
 * maxTokens and stop strings.
 */
const WORDS = [' the', ' quick', ' brown', ' fox', ' jumps', ' over', ' a', ' lazy', ' dog', '.'];

interface InstantJob {
  job: SlotJob;
  events: SlotJobEvents;
  produced: number;
  cancelled: boolean;
  stop: StopDetector;
}

export class InstantEngine implements SlotEngine {
  readonly kind = 'instant' as const;
  private readonly active = new Set<InstantJob>();
  private scheduled = false;
  private disposed = false;

  constructor(readonly contextSize: number, readonly slotCount: number, private readonly tokensPerStep = 1) {}

  submit(job: SlotJob, events: SlotJobEvents): SlotJobHandle {
    if (this.disposed) throw new Error('engine disposed');
    if (this.active.size >= this.slotCount) throw new Error('no free slot');
    const j: InstantJob = { job, events, produced: 0, cancelled: false, stop: new StopDetector(job.stop) };
    this.active.add(j);
    events.onPrompt?.({ promptTokens: job.promptTokens.length, cachedTokens: 0 });
    this.schedule();
    return { cancel: () => { j.cancelled = true; } };
  }

  private schedule(): void {
    if (this.scheduled || this.active.size === 0) return;
    this.scheduled = true;
    setImmediate(() => this.step());
  }

  private step(): void {
    this.scheduled = false;
    for (const j of this.active) {
      const base = { promptTokens: j.job.promptTokens.length, cachedTokens: 0 };
      if (j.cancelled) {
        this.active.delete(j);
        j.events.onDone({ ...base, finishReason: 'cancelled', completionTokens: j.produced });
        continue;
      }
      const n = Math.min(this.tokensPerStep, j.job.maxTokens - j.produced);
      let text = '';
      for (let i = 0; i < n; i++) text += WORDS[(j.produced + i) % WORDS.length];
      j.produced += n;
      const out = j.stop.push(text);
      if (out.length > 0) j.events.onText(out, n);
      if (j.stop.stopped || j.produced >= j.job.maxTokens) {
        this.active.delete(j);
        const rest = j.stop.flush();
        if (rest.length > 0) j.events.onText(rest, 0);
        j.events.onDone({ ...base, finishReason: j.stop.stopped ? 'stop' : 'length', completionTokens: j.produced });
      }
    }
    this.schedule();
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const j of this.active) j.cancelled = true;
  }
}
