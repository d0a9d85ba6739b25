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

/** Inputs of one TokenVectors call at most (requests gathered while another call runs). */
const MAX_GATHERED_INPUTS = 2048;

interface Waiting {
  tokens: Uint32Array[];
  inputs: readonly RawPrompt[];
  resolve: (r: { vectors: Float32Array; dimensions: number }) => void;
  reject: (err: unknown) => void;
}

/**
 * A model worker's embeddings (the `embed` task): each input tokenized with the model's vocabulary (no chat
 * template; the BOS token first when the vocabulary asks for one: PromptBuilder.buildRaw), at most
 * `contextSize` tokens each, then their vectors from the engine's TokenVectors: the native loop's batched
 * embedder, node-llama-cpp's embedding context, or the instant engine's fake vectors. One TokenVectors call
 * runs at a time per worker; the requests that arrive meanwhile are gathered into the next call (up to
 * MAX_GATHERED_INPUTS inputs), so concurrent one-input requests share passes too. Tokenizing is not held back.
 */
export class InputEmbedder {
  private readonly waiting: Waiting[] = [];
  private computing = false;

  constructor(
    private readonly contextSize: number,
    private readonly tokenize: (input: RawPrompt, maxTokens: number) => Promise<Uint32Array>,
    private readonly vectorsOf: TokenVectors,
  ) {}

  async embed(inputs: readonly RawPrompt[]): Promise<EmbeddingTaskResult> {
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
    const { vectors, dimensions } = await new Promise<{ vectors: Float32Array; dimensions: number }>(
      (resolve, reject) => {
        this.waiting.push({ tokens, inputs, resolve, reject });
        if (!this.computing) void this.compute();
      },
    );
    return { ok: true, vectors, dimensions, tokens: tokens.map((t) => t.length) };
  }

  /** Runs the waiting requests, gathered, until none waits; each gets its own slice of the vectors. */
  private async compute(): Promise<void> {
    this.computing = true;
    while (this.waiting.length > 0) {
      let take = 1;
      let inputs = this.waiting[0]!.tokens.length;
      while (take < this.waiting.length && inputs + this.waiting[take]!.tokens.length <= MAX_GATHERED_INPUTS)
        inputs += this.waiting[take++]!.tokens.length;
      const group = this.waiting.splice(0, take);
      try {
        const { vectors, dimensions } = await this.vectorsOf(
          group.flatMap((w) => w.tokens),
          group.flatMap((w) => w.inputs),
        );
        let at = 0;
        for (const w of group) {
          w.resolve({ vectors: vectors.slice(at * dimensions, (at + w.tokens.length) * dimensions), dimensions });
          at += w.tokens.length;
        }
      } catch (err) {
        for (const w of group) w.reject(err);
      }
    }
    this.computing = false;
  }
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
