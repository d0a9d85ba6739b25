import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import type { SlotEngine, SlotJob, SlotJobEvents, SlotJobHandle } from './slot-engine.ts';
import { StopDetector } from './stop-detector.ts';
import { TokenTextDecoder } from './text-decoder.ts';

export interface LlamaSequenceEngineOptions {
  model: LlamaModel;
  /** Tokens per slot. */
  contextSize: number;
  slots: number;
  threads: number;
  batchSize: number;
}

interface Slot {
  sequence: LlamaContextSequence;
  busy: boolean;
}

function commonPrefixLength(a: readonly number[], b: Uint32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The portable engine: node-llama-cpp's own context sequences, one per slot, driven token by token from
 * JavaScript. Slower than the native loop (an async native call per token) but needs no addon.
 * Lives in one worker thread; prefix reuse: a job takes the free sequence whose cached tokens share the
 * longest prefix with its prompt and evaluates only the rest.
 */
export class LlamaSequenceEngine implements SlotEngine {
  readonly kind = 'node-llama-cpp' as const;
  readonly contextSize: number;
  readonly slotCount: number;
  private disposed = false;

  private constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly slots: Slot[],
    contextSize: number,
  ) {
    this.contextSize = contextSize;
    this.slotCount = slots.length;
  }

  static async load(o: LlamaSequenceEngineOptions): Promise<LlamaSequenceEngine> {
    const context = await o.model.createContext({
      contextSize: o.contextSize * o.slots,
      sequences: o.slots,
      threads: o.threads,
      batchSize: o.batchSize,
    });
    const slots: Slot[] = [];
    for (let i = 0; i < o.slots; i++) slots.push({ sequence: context.getSequence(), busy: false });
    return new LlamaSequenceEngine(o.model, context, slots, o.contextSize);
  }

  submit(job: SlotJob, events: SlotJobEvents): SlotJobHandle {
    if (this.disposed) throw new Error('engine disposed');
    let best: Slot | undefined;
    let bestLen = -1;
    for (const s of this.slots) {
      if (s.busy) continue;
      const len = commonPrefixLength(s.sequence.contextTokens, job.promptTokens);
      if (len > bestLen) {
        best = s;
        bestLen = len;
      }
    }
    if (!best) throw new Error('no free slot');
    best.busy = true;
    const state = { cancelled: false };
    const slot = best;
    // The slot is free again before the terminal callback runs, so a job submitted from it can reuse the prefix.
    const release = () => { slot.busy = false; };
    void this.run(slot, job, {
      onPrompt: events.onPrompt?.bind(events),
      onText: events.onText.bind(events),
      onDone: (r) => { release(); events.onDone(r); },
      onError: (e) => { release(); events.onError(e); },
    }, state, bestLen);
    return { cancel: () => { state.cancelled = true; } };
  }

  private async run(slot: Slot, job: SlotJob, events: SlotJobEvents, state: { cancelled: boolean }, common: number): Promise<void> {
    const seq = slot.sequence;
    const prompt = Array.from(job.promptTokens) as Token[];
    const reuse = Math.min(common, prompt.length - 1);
    let completionTokens = 0;
    const result = (finishReason: 'stop' | 'length' | 'cancelled') => ({ finishReason, promptTokens: prompt.length, cachedTokens: reuse, completionTokens });
    try {
      if (seq.nextTokenIndex > reuse) await seq.eraseContextTokenRanges([{ start: reuse, end: seq.nextTokenIndex }]);
      if (state.cancelled) return events.onDone(result('cancelled'));
      const stop = new StopDetector(job.stop);
      const decoder = new TokenTextDecoder((t, last) => this.model.detokenize(t as Token[], false, last as Token[]));
      const generated: Token[] = [];
      const s = job.sampling;
      const iterator = seq.evaluate(prompt.slice(reuse), {
        temperature: s.temperature,
        topK: s.topK,
        topP: s.topP,
        minP: s.minP,
        seed: s.seed,
        repeatPenalty: s.repeatPenalty !== 1 || s.presencePenalty !== 0 || s.frequencyPenalty !== 0
          ? { punishTokens: () => generated.slice(-s.penaltyLastN), penalty: s.repeatPenalty, presencePenalty: s.presencePenalty, frequencyPenalty: s.frequencyPenalty }
          : undefined,
      });
      let first = true;
      // The generator ends by itself on an end-of-generation token: that is a 'stop'.
      let finish: 'stop' | 'length' | 'cancelled' = 'stop';
      const room = Math.min(job.maxTokens, this.contextSize - prompt.length);
      for await (const token of iterator) {
        if (first) {
          events.onPrompt?.({ promptTokens: prompt.length, cachedTokens: reuse });
          first = false;
        }
        if (state.cancelled) { finish = 'cancelled'; break; }
        if (this.model.isEogToken(token)) { finish = 'stop'; break; }
        generated.push(token);
        completionTokens++;
        const text = stop.push(decoder.push(token));
        if (text.length > 0) events.onText(text, 1);
        if (stop.stopped) { finish = 'stop'; break; }
        if (completionTokens >= room) { finish = 'length'; break; }
      }
      if (finish !== 'cancelled') {
        const rest = stop.flush();
        if (rest.length > 0) events.onText(rest, 0);
      }
      events.onDone(result(finish));
    } catch (err) {
      events.onError({ message: err instanceof Error ? err.message : String(err), code: 'engine_error' });
    }
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.context.dispose();
  }
}
