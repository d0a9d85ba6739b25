import type { GenerationJob, TokenLogprob } from '../../native/generation-job.ts';
import type { SlotEngine, SlotJobEvents, SlotJobHandle } from './slot-engine.ts';
import { StopDetector } from './stop-detector.ts';

/**
 * A test engine with no model math, enabled only by `--engine instant`: every step (one macrotask) gives
 * each active job its next `tokensPerStep` tokens of a fixed word cycle, so benchmarks measure what the
 * gateway, the worker port and the SSE writer can carry. Deterministic: job output depends only on
 * maxTokens, the room the prompt leaves in the slot's context (one token per word) and stop strings. A grammar is accepted and ignored; asked for logprobs, it reports each word
 * as certain (logprob 0) with the next words of the cycle as alternatives at a fixed -10.
 */
const WORDS = [' the', ' quick', ' brown', ' fox', ' jumps', ' over', ' a', ' lazy', ' dog', '.'];

interface InstantJob {
  job: GenerationJob;
  promptTokens: number;
  /** Completion tokens at most: the job's maxTokens, or the room its prompt leaves in the slot's context. */
  limit: number;
  events: SlotJobEvents;
  produced: number;
  cancelled: boolean;
  stop: StopDetector;
  /** Entries of words whose text is not emitted yet (jobs that asked for logprobs only). */
  logprobs: TokenLogprob[] | null;
}

function wordLogprob(index: number, top: number): TokenLogprob {
  const entry = (i: number, logprob: number) => {
    const token = WORDS[i % WORDS.length] as string;
    return { token, logprob, bytes: [...Buffer.from(token, 'utf8')] };
  };
  return { ...entry(index, 0), top: Array.from({ length: top }, (_, k) => entry(index + k, k === 0 ? 0 : -10)) };
}

export class InstantEngine implements SlotEngine {
  readonly kind = 'instant' as const;
  readonly relaysEvents = false;
  private readonly active = new Set<InstantJob>();
  private scheduled = false;
  private disposed = false;

  constructor(
    readonly contextSize: number,
    readonly slotCount: number,
    private readonly tokensPerStep = 1,
  ) {}

  submit(promptTokens: Uint32Array, job: GenerationJob, events: SlotJobEvents): SlotJobHandle {
    if (this.disposed) throw new Error('engine disposed');
    if (this.active.size >= this.slotCount) throw new Error('no free slot');
    const limit = Math.min(job.maxTokens, this.contextSize - promptTokens.length);
    const j: InstantJob = {
      job,
      promptTokens: promptTokens.length,
      limit,
      events,
      produced: 0,
      cancelled: false,
      stop: new StopDetector(job.stops),
      logprobs: job.topLogprobs >= 0 ? [] : null,
    };
    this.active.add(j);
    events.onPrompt?.({ promptTokens: promptTokens.length, cachedTokens: 0 });
    this.schedule();
    return {
      cancel: () => {
        j.cancelled = true;
      },
    };
  }

  private schedule(): void {
    if (this.scheduled || this.active.size === 0) return;
    this.scheduled = true;
    setImmediate(() => this.step());
  }

  private step(): void {
    this.scheduled = false;
    for (const j of this.active) {
      const base = { promptTokens: j.promptTokens, cachedTokens: 0 };
      if (j.cancelled) {
        this.active.delete(j);
        j.events.onDone({ ...base, finishReason: 'cancelled', completionTokens: j.produced });
        continue;
      }
      const n = Math.min(this.tokensPerStep, j.limit - j.produced);
      let text = '';
      for (let i = 0; i < n; i++) {
        text += WORDS[(j.produced + i) % WORDS.length];
        j.logprobs?.push(wordLogprob(j.produced + i, j.job.topLogprobs));
      }
      j.produced += n;
      const out = j.stop.push(text);
      if (out.length > 0) this.emit(j, out, n);
      if (j.stop.stopped || j.produced >= j.limit) {
        this.active.delete(j);
        const rest = j.stop.flush();
        if (rest.length > 0) this.emit(j, rest, 0);
        j.events.onDone({
          ...base,
          finishReason: j.stop.stopped ? 'stop' : 'length',
          completionTokens: j.produced,
          ...(j.stop.matched !== undefined ? { stop: j.stop.matched } : {}),
        });
      }
    }
    this.schedule();
  }

  private emit(j: InstantJob, text: string, tokens: number): void {
    if (j.logprobs === null) return j.events.onText(text, tokens);
    const logprobs = j.logprobs;
    j.logprobs = [];
    j.events.onText(text, tokens, logprobs);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const j of this.active) j.cancelled = true;
  }
}
