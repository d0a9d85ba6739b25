import {
  LlamaGrammarEvaluationState,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import type { GenerationJob, TokenLogprob } from '../../native/generation-job.ts';
import { GrammarCloser } from './grammar-closer.ts';
import { GrammarJobCloser } from './grammar-job-closer.ts';
import { llamaGrammarOps } from './llama-grammar-ops.ts';
import { llamaTokenPieces } from './llama-token-pieces.ts';
import type { SlotEngine, SlotJobEvents, SlotJobHandle } from './slot-engine.ts';
import { StopDetector } from './stop-detector.ts';
import { TokenTextDecoder } from './text-decoder.ts';
import { Utf8TokenBiases } from './utf8-token-bias.ts';

export interface LlamaSequenceEngineOptions {
  model: LlamaModel;
  /** Tokens per slot. */
  contextSize: number;
  slots: number;
  threads: number;
  batchSize: number;
  /** Aborts the context's creation (its promise rejects). */
  signal?: AbortSignal;
}

interface Slot {
  sequence: LlamaContextSequence;
  busy: boolean;
  /** The cache partition of the job that left the sequence's tokens (GenerationJob.cachePartition). */
  partition: string;
  /** When a job last took it (a counter): among equal prefixes the least recently used goes first. */
  lastUsed: number;
}

/** The logprob reported for a token of probability 0 (OpenAI's own floor). */
const MIN_LOGPROB = -9999;

/** Distinct grammars kept parsed (as evaluation-state templates, cloned per job). */
const GRAMMAR_CACHE_SIZE = 32;

/** Thrown (and reported as onError code 'invalid_grammar') when node-llama-cpp cannot parse a grammar. */
class InvalidGrammarError extends Error {}

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
 * longest prefix with its prompt and evaluates only the rest, among sequences its cache partition left (on a
 * tie, the least recently used: a job with nothing to reuse leaves the freshest conversations' sequences alone).
 */
export class LlamaSequenceEngine implements SlotEngine {
  readonly kind = 'node-llama-cpp' as const;
  readonly relaysEvents = false;
  readonly contextSize: number;
  readonly slotCount: number;
  /** Compute threads of its context (the worker's plan); its embedding context uses as many. */
  readonly threads: number;
  private disposed = false;
  /** Grammar text -> a parsed, never-used evaluation state; Map order = least recently used first. */
  private readonly grammars = new Map<string, LlamaGrammarEvaluationState>();
  /** Token bans that keep grammar jobs valid UTF-8, and the walk that closes them in time; built at the first grammar job. */
  private grammarTools?: {
    utf8: Utf8TokenBiases;
    closer: GrammarCloser<LlamaGrammarEvaluationState>;
    ops: ReturnType<typeof llamaGrammarOps>;
  };
  private clock = 0;

  private constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly slots: Slot[],
    contextSize: number,
    threads: number,
  ) {
    this.contextSize = contextSize;
    this.slotCount = slots.length;
    this.threads = threads;
  }

  static async load(o: LlamaSequenceEngineOptions): Promise<LlamaSequenceEngine> {
    const context = await o.model.createContext({
      contextSize: o.contextSize * o.slots,
      sequences: o.slots,
      threads: o.threads,
      batchSize: o.batchSize,
      ...(o.signal ? { createSignal: o.signal } : {}),
    });
    const slots: Slot[] = [];
    for (let i = 0; i < o.slots; i++)
      slots.push({ sequence: context.getSequence(), busy: false, partition: '', lastUsed: 0 });
    return new LlamaSequenceEngine(o.model, context, slots, o.contextSize, o.threads);
  }

  submit(promptTokens: Uint32Array, job: GenerationJob, events: SlotJobEvents): SlotJobHandle {
    if (this.disposed) throw new Error('engine disposed');
    const partition = job.cachePartition;
    let best: Slot | undefined;
    let bestLen = -1;
    for (const s of this.slots) {
      if (s.busy) continue;
      // Another partition's tokens are never compared: its sequence is reused only as an empty one (run() erases it).
      const len = s.partition === partition ? commonPrefixLength(s.sequence.contextTokens, promptTokens) : 0;
      if (len > bestLen || (len === bestLen && best !== undefined && s.lastUsed < best.lastUsed)) {
        best = s;
        bestLen = len;
      }
    }
    if (!best) throw new Error('no free slot');
    best.busy = true;
    best.partition = partition;
    best.lastUsed = ++this.clock;
    const state = { cancelled: false };
    const slot = best;
    // The slot is free again before the terminal callback runs, so a job submitted from it can reuse the prefix.
    const release = () => {
      slot.busy = false;
    };
    void this.run(
      slot,
      promptTokens,
      job,
      {
        onPrompt: events.onPrompt?.bind(events),
        onText: events.onText.bind(events),
        onDone: (r) => {
          release();
          events.onDone(r);
        },
        onError: (e) => {
          release();
          events.onError(e);
        },
      },
      state,
      bestLen,
    );
    return {
      cancel: () => {
        state.cancelled = true;
      },
    };
  }

  private async run(
    slot: Slot,
    promptTokens: Uint32Array,
    job: GenerationJob,
    events: SlotJobEvents,
    state: { cancelled: boolean },
    common: number,
  ): Promise<void> {
    const seq = slot.sequence;
    const prompt = Array.from(promptTokens) as Token[];
    const reuse = Math.min(common, prompt.length - 1);
    let completionTokens = 0;
    const result = (finishReason: 'stop' | 'length' | 'cancelled') => ({
      finishReason,
      promptTokens: prompt.length,
      cachedTokens: reuse,
      completionTokens,
    });
    try {
      if (seq.nextTokenIndex > reuse) await seq.eraseContextTokenRanges([{ start: reuse, end: seq.nextTokenIndex }]);
      if (state.cancelled) return events.onDone(result('cancelled'));
      const grammarEvaluationState = job.grammar !== '' ? await this.grammarState(job.grammar) : undefined;
      if (state.cancelled) return events.onDone(result('cancelled'));
      const tools = grammarEvaluationState ? this.toolsForGrammar() : undefined;
      // Grammar jobs only: the grammar's state, handed to the sampler before each token, closed in time near the budget's end.
      const closing =
        grammarEvaluationState && tools
          ? new GrammarJobCloser(tools.closer, tools.ops, grammarEvaluationState)
          : undefined;
      const stop = new StopDetector(job.stops);
      const decoder = new TokenTextDecoder(
        (t, last) => this.model.detokenize(t as Token[], false, last as Token[]),
        undefined,
        prompt.slice(-4),
      );
      const generated: Token[] = [];
      // Grammar jobs only: bans that keep the generated bytes valid UTF-8, following `generated`.
      const tokenBias = tools?.utf8.forJob(generated);
      const s = job.sampling;
      const options = {
        temperature: s.temperature,
        topK: s.topK,
        topP: s.topP,
        minP: s.minP,
        seed: s.seed,
        repeatPenalty:
          s.repeatPenalty !== 1 || s.presencePenalty !== 0 || s.frequencyPenalty !== 0
            ? {
                punishTokens: () => generated.slice(-s.penaltyLastN),
                penalty: s.repeatPenalty,
                presencePenalty: s.presencePenalty,
                frequencyPenalty: s.frequencyPenalty,
              }
            : undefined,
        ...(closing ? { grammarEvaluationState: () => closing.state(), tokenBias } : {}),
      };
      const wantLogprobs = job.topLogprobs >= 0;
      // Plain requests keep node-llama-cpp's plain token iterator (no probabilities computed).
      // Driven by hand: a grammar job may hand the generator a replacement token (next(token)) when it closes in time.
      const iterator: AsyncGenerator<
        Token | { token: Token; probabilities: Map<Token, number> },
        void,
        Token | undefined
      > = wantLogprobs
        ? seq.evaluateWithMetadata(prompt.slice(reuse), { probabilities: true }, options)
        : seq.evaluate(prompt.slice(reuse), options);
      let pendingLogprobs: TokenLogprob[] = [];
      let first = true;
      // The generator ends by itself on an end-of-generation token: that is a 'stop'.
      let finish: 'stop' | 'length' | 'cancelled' = 'stop';
      // The job's cap, or the room its prompt leaves in the slot's context (as the native loop ends it).
      const room = Math.min(job.maxTokens, this.contextSize - prompt.length);
      let replacement: Token | undefined;
      try {
        for (;;) {
          closing?.prepare(room - completionTokens);
          const next = await iterator.next(replacement);
          replacement = undefined;
          if (next.done) break;
          const item = next.value;
          let token = typeof item === 'number' ? item : item.token;
          const probabilities = typeof item === 'number' ? undefined : item.probabilities;
          if (first) {
            events.onPrompt?.({ promptTokens: prompt.length, cachedTokens: reuse });
            first = false;
          }
          if (state.cancelled) {
            finish = 'cancelled';
            break;
          }
          if (this.model.isEogToken(token)) {
            finish = 'stop';
            break;
          }
          if (closing) {
            const settled = closing.settle(token, room - completionTokens);
            if (settled === 'end') {
              finish = 'stop';
              break;
            }
            if (settled.token !== token) replacement = token = settled.token as Token;
          }
          generated.push(token);
          completionTokens++;
          if (probabilities)
            pendingLogprobs.push(
              this.logprobOf(
                token,
                probabilities,
                job.topLogprobs,
                generated.length > 1 ? generated.slice(-2, -1) : prompt.slice(-1),
              ),
            );
          const text = stop.push(decoder.push(token));
          if (text.length > 0) {
            if (wantLogprobs) {
              events.onText(text, 1, pendingLogprobs);
              pendingLogprobs = [];
            } else {
              events.onText(text, 1);
            }
          }
          if (stop.stopped) {
            finish = 'stop';
            break;
          }
          if (completionTokens >= room) {
            finish = 'length';
            break;
          }
        }
      } finally {
        await iterator.return(undefined);
      }
      if (finish !== 'cancelled') {
        const rest = stop.flush();
        if (rest.length > 0) {
          if (wantLogprobs) events.onText(rest, 0, pendingLogprobs);
          else events.onText(rest, 0);
        }
      }
      events.onDone(
        finish === 'stop' && stop.matched !== undefined ? { ...result(finish), stop: stop.matched } : result(finish),
      );
    } catch (err) {
      events.onError({
        message: err instanceof Error ? err.message : String(err),
        code: err instanceof InvalidGrammarError ? 'invalid_grammar' : 'engine_error',
      });
    }
  }

  /** The model's grammar-job helpers, made at its first grammar job (one scan of the vocabulary for both). */
  private toolsForGrammar(): NonNullable<LlamaSequenceEngine['grammarTools']> {
    if (!this.grammarTools) {
      const pieces = llamaTokenPieces(this.model);
      const ops = llamaGrammarOps(this.model);
      const eog = this.model.tokens.eos ?? this.model.tokens.eot ?? -1;
      this.grammarTools = {
        utf8: new Utf8TokenBiases(this.model, pieces),
        closer: new GrammarCloser(pieces, eog, ops),
        ops,
      };
    }
    return this.grammarTools;
  }

  /** A fresh evaluation state for `text`: parsed once per distinct text, then cloned. */
  private async grammarState(text: string): Promise<LlamaGrammarEvaluationState> {
    let template = this.grammars.get(text);
    if (template) {
      this.grammars.delete(text);
    } else {
      try {
        const grammar = await this.model.llama.createGrammar({ grammar: text });
        template = new LlamaGrammarEvaluationState({ model: this.model, grammar });
      } catch (err) {
        throw new InvalidGrammarError(
          `invalid grammar (node-llama-cpp: ${err instanceof Error ? err.message : String(err)})`,
        );
      }
      if (this.grammars.size >= GRAMMAR_CACHE_SIZE) this.grammars.delete(this.grammars.keys().next().value as string);
    }
    this.grammars.set(text, template);
    return template.clone();
  }

  /**
   * node-llama-cpp reports the distribution after its sampler chain (token bias, penalties, grammar, and for
   * temperature > 0 top-k / top-p / min-p truncation and temperature), sorted best first: at temperature 0
   * without penalties that is the raw model distribution the native engine reports. A token's bytes are
   * those of its detokenized text (a token holding part of a UTF-8 character shows U+FFFD), so they can differ
   * from the native engine's raw token bytes for such tokens.
   */
  private logprobOf(token: Token, probabilities: Map<Token, number>, topN: number, before: Token[]): TokenLogprob {
    const entry = (t: Token, p: number) => {
      const text = this.model.detokenize([t], false, before); // after `before`, a word-start space is kept
      // A token outside the reported distribution (one the closer put in place of the sampled one) has p = 0:
      // OpenAI's floor for such a token, -9999, stands in for -Infinity (which JSON cannot carry).
      return { token: text, logprob: Math.max(Math.log(p), MIN_LOGPROB), bytes: [...Buffer.from(text, 'utf8')] };
    };
    const top: TokenLogprob['top'] = [];
    for (const [t, p] of probabilities) {
      if (top.length >= topN) break;
      top.push(entry(t, p));
    }
    return { ...entry(token, probabilities.get(token) ?? 0), top };
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.context.dispose();
  }
}
