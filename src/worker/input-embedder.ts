import { createHash } from 'node:crypto';
import type { LlamaEmbeddingContext, LlamaModel, Token } from 'node-llama-cpp';
import type { EmbeddingTaskResult } from '../engine/embedding-task.ts';
import type { RawPrompt } from '../protocol/chat-request.ts';
import { InvalidPromptToken, PromptTooLong } from './prompt-tokenizer.ts';

/** Unit vectors of tokenized inputs, flat (`dimensions` floats each, in order). */
export type TokenVectors = (
  tokens: Uint32Array[],
  inputs: readonly RawPrompt[],
) => Promise<{ vectors: Float32Array; dimensions: number }>;

/**
 * Tokens of the first TokenVectors call, and of every call at least (an input longer than that goes alone): the
 * native embedder's pass packs 512 (native/src/embedder.cpp kPackTokens). Later calls are sized from the time the
 * last one took per token, to take about `targetCallMs`: long enough that a call's fixed cost (a thread hop, the
 * copies) stays small beside its passes (one pass a call cost 0.42-0.66x the inputs/s in bench:embeddings), and
 * short enough that between calls a request whose client left is dropped and the waiting requests take turns soon.
 */
export const MIN_CALL_TOKENS = 512;
/** The largest call, in tokens, however fast the passes. */
const MAX_CALL_TOKENS = 1 << 16;
/** Inputs of one call at most (the most one request may send). */
const CALL_INPUTS = 2048;
/**
 * What a call should take, by default (ms). bench:embeddings, interleaved with the code before calls (one call a
 * request) on a 2-core Zen 5: at 100 ms the tiny chat model's 256-input request gave 0.35-0.67x the inputs/s (its
 * whole request takes about 100 ms, so it became several calls); at 250 ms every figure was within the run's noise
 * of before (0.84-1.08x, stories260K 0.99x).
 */
const TARGET_CALL_MS = 250;

export interface InputEmbedderOptions {
  /** What a call should take (ms); 0 keeps every call at MIN_CALL_TOKENS. */
  targetCallMs?: number;
  /** The clock the calls are timed with (ms). */
  now?: () => number;
}

/** The `embed` answer of a request whose client left before its vectors were computed. */
export const EMBEDDING_CANCELLED = { ok: false, reason: 'cancelled' } as const;

interface Waiting {
  tokens: Uint32Array[];
  inputs: readonly RawPrompt[];
  /** Inputs embedded so far (the next call goes on from here), and their vectors. */
  done: number;
  parts: Float32Array[];
  cancelled: () => boolean;
  resolve: (r: { vectors: Float32Array; dimensions: number } | typeof EMBEDDING_CANCELLED) => void;
  reject: (err: unknown) => void;
}

/**
 * A model worker's embeddings (the `embed` task): each input tokenized with the model's vocabulary (no chat
 * template; the BOS token first when the vocabulary asks for one: PromptBuilder.buildRaw), at most
 * `contextSize` tokens each, then their vectors from the engine's TokenVectors: the native loop's batched
 * embedder, node-llama-cpp's embedding context, or the instant engine's fake vectors. One TokenVectors call
 * runs at a time per worker, of about `targetCallMs` (MIN_CALL_TOKENS), taken in turn from every waiting request
 * (one input each per round), so concurrent requests share calls and none waits behind another's whole input list.
 * A request's `cancelled()` is read before each call: once true, it computes nothing more and answers
 * EMBEDDING_CANCELLED. Tokenizing is not held back.
 */
export class InputEmbedder {
  private readonly waiting: Waiting[] = [];
  private computing = false;
  /** The request that led the last call. */
  private led: Waiting | null = null;
  /** Tokens the next call may hold (sized from the last call's time). */
  private callTokens = MIN_CALL_TOKENS;
  private readonly targetCallMs: number;
  private readonly now: () => number;

  constructor(
    private readonly contextSize: number,
    private readonly tokenize: (input: RawPrompt, maxTokens: number) => Promise<Uint32Array>,
    private readonly vectorsOf: TokenVectors,
    options: InputEmbedderOptions = {},
  ) {
    this.targetCallMs = options.targetCallMs ?? TARGET_CALL_MS;
    this.now = options.now ?? (() => performance.now());
  }

  async embed(inputs: readonly RawPrompt[], cancelled: () => boolean = () => false): Promise<EmbeddingTaskResult> {
    const tokens: Uint32Array[] = [];
    for (const [index, input] of inputs.entries()) {
      try {
        tokens.push(await this.tokenize(input, this.contextSize));
      } catch (err) {
        if (err instanceof PromptTooLong)
          return {
            ok: false,
            index,
            reason: 'too_long',
            atLeastTokens: err.atLeastTokens,
            contextSize: this.contextSize,
          };
        if (err instanceof InvalidPromptToken)
          return { ok: false, index, reason: 'invalid_token', vocabularySize: err.vocabularySize };
        throw err;
      }
    }
    const r = await new Promise<{ vectors: Float32Array; dimensions: number } | typeof EMBEDDING_CANCELLED>(
      (resolve, reject) => {
        this.waiting.push({ tokens, inputs, done: 0, parts: [], cancelled, resolve, reject });
        if (!this.computing) void this.compute();
      },
    );
    if (!('vectors' in r)) return r;
    return { ok: true, vectors: r.vectors, dimensions: r.dimensions, tokens: tokens.map((t) => t.length) };
  }

  /** Runs calls until no request waits; each request gets its vectors once all its inputs were in calls. */
  private async compute(): Promise<void> {
    this.computing = true;
    while (this.waiting.length > 0) {
      for (const w of this.waiting.filter((w) => w.cancelled())) this.finish(w, () => w.resolve(EMBEDDING_CANCELLED));
      if (this.waiting.length === 0) break;
      const call = this.nextCall();
      try {
        const tokens = call.flatMap(({ w, count }) => w.tokens.slice(w.done, w.done + count));
        const began = this.now();
        const { vectors, dimensions } = await this.vectorsOf(
          tokens,
          call.flatMap(({ w, count }) => w.inputs.slice(w.done, w.done + count)),
        );
        this.sizeNextCall(
          tokens.reduce((n, t) => n + t.length, 0),
          this.now() - began,
        );
        let at = 0;
        for (const { w, count } of call) {
          w.parts.push(vectors.slice(at * dimensions, (at + count) * dimensions));
          w.done += count;
          at += count;
          if (w.done === w.tokens.length) this.finish(w, () => w.resolve({ vectors: joined(w.parts), dimensions }));
        }
      } catch (err) {
        for (const { w } of call) this.finish(w, () => w.reject(err));
      }
    }
    this.computing = false;
  }

  /**
   * The next call: one input from each waiting request in turn, while the call holds under callTokens. The request
   * that leads a call goes to the back of the line for the next one, so every request leads a call in turn (one
   * whose next input fills a call alone would otherwise keep the others out).
   */
  private nextCall(): Array<{ w: Waiting; count: number }> {
    if (this.waiting.length > 1 && this.led === this.waiting[0]) this.waiting.push(this.waiting.shift()!);
    this.led = this.waiting[0]!;
    const counts = new Map<Waiting, number>();
    let tokens = 0;
    let inputs = 0;
    for (let added = true; added && inputs < CALL_INPUTS;) {
      added = false;
      for (const w of this.waiting) {
        const next = w.done + (counts.get(w) ?? 0);
        if (next >= w.tokens.length || inputs >= CALL_INPUTS) continue;
        const length = w.tokens[next]!.length;
        if (inputs > 0 && tokens + length > this.callTokens) continue;
        counts.set(w, (counts.get(w) ?? 0) + 1);
        tokens += length;
        inputs++;
        added = true;
      }
    }
    return [...counts].map(([w, count]) => ({ w, count }));
  }

  /**
   * The next call's tokens: halfway from the current size to what takes targetCallMs at the last call's pace (a
   * noisy machine's odd call moves it half as far), within MIN/MAX_CALL_TOKENS. A call under half MIN_CALL_TOKENS
   * (a request's remainder, a few short inputs) says little of the pace, being mostly fixed cost: it sizes nothing.
   */
  private sizeNextCall(tokens: number, ms: number): void {
    if (this.targetCallMs <= 0 || tokens < MIN_CALL_TOKENS / 2) return;
    const perToken = ms / tokens;
    const fit = perToken > 0 ? this.targetCallMs / perToken : MAX_CALL_TOKENS;
    this.callTokens = Math.round(Math.min(MAX_CALL_TOKENS, Math.max(MIN_CALL_TOKENS, (this.callTokens + fit) / 2)));
  }

  private finish(w: Waiting, settle: () => void): void {
    const i = this.waiting.indexOf(w);
    if (i < 0) return;
    this.waiting.splice(i, 1);
    settle();
  }
}

function joined(parts: Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * The node-llama-cpp engine's vectors: its LlamaEmbeddingContext (created at the first use, on the worker's
 * model, with the worker's planned `threads`: node-llama-cpp's default is every core, which on a busy machine
 * made one tiny input take hundreds of ms instead of under one), one input at a time, with the pooling
 * node-llama-cpp applies (the model's own, else the last token's hidden state), L2-normalised.
 */
export function llamaEmbeddingVectors(model: LlamaModel, contextSize: number, threads: number): TokenVectors {
  let context: Promise<LlamaEmbeddingContext> | null = null;
  return async (tokens) => {
    context ??= model.createEmbeddingContext({ contextSize, batchSize: contextSize, threads });
    const ctx = await context;
    const out: Float32Array[] = [];
    for (const t of tokens)
      out.push(unit(Float32Array.from((await ctx.getEmbeddingFor(Array.from(t) as Token[])).vector)));
    return flat(out);
  };
}

/** Dimensions of the instant test engine's vectors. */
export const INSTANT_EMBEDDING_DIMENSIONS = 64;

/**
 * The instant test engine's vectors (it has no model): a deterministic unit vector per input, from the SHA-256
 * of its text or token ids. Equal inputs give equal vectors, different inputs (almost surely) different ones.
 */
export const instantVectors: TokenVectors = async (_tokens, inputs) => {
  const out = inputs.map((input) => {
    const seed = JSON.stringify(input);
    const v = new Float32Array(INSTANT_EMBEDDING_DIMENSIONS);
    for (let block = 0; block * 8 < v.length; block++) {
      const digest = createHash('sha256').update(`${block}:${seed}`).digest();
      for (let i = 0; i < 8 && block * 8 + i < v.length; i++) v[block * 8 + i] = digest.readInt32LE(i * 4) / 2 ** 31;
    }
    return unit(v);
  });
  return flat(out);
};

function unit(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = v[i]! / norm;
  return v;
}

function flat(vectors: Float32Array[]): { vectors: Float32Array; dimensions: number } {
  const dimensions = vectors[0]?.length ?? 0;
  const out = new Float32Array(vectors.length * dimensions);
  vectors.forEach((v, i) => out.set(v, i * dimensions));
  return { vectors: out, dimensions };
}
