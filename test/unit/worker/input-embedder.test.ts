import { describe, expect, it } from 'vitest';
import type { RawPrompt } from '../../../src/protocol/chat-request.ts';
import {
  MIN_CALL_TOKENS,
  EMBEDDING_CANCELLED,
  InputEmbedder,
  INSTANT_EMBEDDING_DIMENSIONS,
  instantVectors,
  type TokenVectors,
} from '../../../src/worker/input-embedder.ts';
import { PromptTooLong } from '../../../src/worker/prompt-tokenizer.ts';

/** One token per character (its code); a vector per input: [its first token, its length]. */
const tokenize = async (input: RawPrompt, max: number) => {
  const t =
    typeof input === 'string' ? Uint32Array.from([...input].map((c) => c.charCodeAt(0))) : Uint32Array.from(input);
  if (t.length > max) throw new PromptTooLong(t.length);
  return t;
};

function recording(): { calls: number[]; vectors: TokenVectors } {
  const calls: number[] = [];
  return {
    calls,
    vectors: async (tokens) => {
      calls.push(tokens.length);
      await new Promise((r) => setTimeout(r, 5));
      return { vectors: Float32Array.from(tokens.flatMap((t) => [t[0]!, t.length])), dimensions: 2 };
    },
  };
}

/** Calls held at MIN_CALL_TOKENS, whatever they take: the tests of turns and cuts count calls. */
const EVERY_CALL_MINIMAL = { targetCallMs: 0 };

/** An embedder at EVERY_CALL_MINIMAL whose calls (5 ms each) record each input's first token, call by call. */
function firstTokensSeen(contextSize: number): { seen: number[][]; embedder: InputEmbedder } {
  const seen: number[][] = [];
  const embedder = new InputEmbedder(
    contextSize,
    tokenize,
    async (tokens) => {
      seen.push(tokens.map((t) => t[0]!));
      await new Promise((r) => setTimeout(r, 5));
      return { vectors: new Float32Array(tokens.length), dimensions: 1 };
    },
    EVERY_CALL_MINIMAL,
  );
  return { seen, embedder };
}

describe('InputEmbedder', () => {
  it('gathers the requests that arrive during a call into the next one, each with its own vectors', async () => {
    const { calls, vectors } = recording();
    const embedder = new InputEmbedder(16, tokenize, vectors);
    const [a, b, c] = await Promise.all([
      embedder.embed(['a']),
      embedder.embed(['bb', 'ccc']),
      embedder.embed([[9, 9]]),
    ]);
    expect(calls).toEqual([1, 3]);
    expect(a).toEqual({ ok: true, vectors: Float32Array.from([97, 1]), dimensions: 2, tokens: [1] });
    expect(b).toEqual({ ok: true, vectors: Float32Array.from([98, 2, 99, 3]), dimensions: 2, tokens: [2, 3] });
    expect(c).toEqual({ ok: true, vectors: Float32Array.from([9, 2]), dimensions: 2, tokens: [2] });
  });

  it('splits a long request into calls of at most MIN_CALL_TOKENS tokens, its vectors joined in order', async () => {
    const { calls, vectors } = recording();
    const embedder = new InputEmbedder(MIN_CALL_TOKENS, tokenize, vectors, EVERY_CALL_MINIMAL);
    const quarter = MIN_CALL_TOKENS / 4;
    const inputs = Array.from({ length: 10 }, (_, i) => Array.from({ length: quarter }, () => i + 1));
    const r = await embedder.embed(inputs);
    expect(calls).toEqual([4, 4, 2]);
    expect(r).toEqual({
      ok: true,
      vectors: Float32Array.from(inputs.flatMap((t) => [t[0]!, quarter])),
      dimensions: 2,
      tokens: inputs.map(() => quarter),
    });
    // An input of the whole context goes alone.
    calls.length = 0;
    await embedder.embed([Array.from({ length: MIN_CALL_TOKENS }, () => 1), [2]]);
    expect(calls).toEqual([1, 1]);
  });

  it("a short request that arrives during a long one's call is in the next call, not after the long one", async () => {
    const { seen, embedder } = firstTokensSeen(MIN_CALL_TOKENS);
    const half = MIN_CALL_TOKENS / 2;
    const long = embedder.embed(Array.from({ length: 8 }, () => Array.from({ length: half }, () => 1)));
    await new Promise((r) => setTimeout(r, 1)); // the long request's first call is running
    let shortDoneAfter = -1;
    const short = embedder.embed([[2]]).then(() => (shortDoneAfter = seen.length));
    await Promise.all([long, short]);
    expect(seen[0]).toEqual([1, 1]);
    expect([...seen[1]!].sort()).toEqual([1, 2]); // one input each in turn, under the call's tokens
    expect(shortDoneAfter).toBeLessThan(seen.length); // done before the long request's last call
    expect(seen.flat().filter((t) => t === 1)).toHaveLength(8);
  });

  it('a short request gets into the next call even when each input of a long one fills a call alone', async () => {
    const { seen, embedder } = firstTokensSeen(2 * MIN_CALL_TOKENS);
    const long = embedder.embed(Array.from({ length: 6 }, () => Array.from({ length: MIN_CALL_TOKENS + 1 }, () => 1)));
    await new Promise((r) => setTimeout(r, 1));
    const short = embedder.embed([[2], [2]]);
    await Promise.all([long, short]);
    expect(seen[0]).toEqual([1]);
    expect(seen[1]).toEqual([2, 2]); // it leads the next call; the long one's next input does not fit beside it
    expect(seen.slice(2)).toEqual([[1], [1], [1], [1], [1]]);
  });

  it('a request whose client left computes nothing more and answers cancelled; the others go on', async () => {
    const { calls, vectors } = recording();
    const embedder = new InputEmbedder(MIN_CALL_TOKENS, tokenize, vectors, EVERY_CALL_MINIMAL);
    let left = false;
    const half = MIN_CALL_TOKENS / 2;
    const leaving = embedder.embed(
      Array.from({ length: 20 }, () => Array.from({ length: half }, () => 1)),
      () => left,
    );
    await new Promise((r) => setTimeout(r, 0)); // tokenized: the first call (two of its inputs) runs
    const staying = embedder.embed(Array.from({ length: 4 }, () => Array.from({ length: half }, () => 2)));
    left = true;
    expect(await leaving).toEqual(EMBEDDING_CANCELLED);
    expect(await staying).toMatchObject({ ok: true, tokens: [half, half, half, half] });
    // The first call, then the staying request's two calls: nothing more of the one that left.
    expect(calls).toEqual([2, 2, 2]);
    expect(await embedder.embed([[3]], () => true)).toEqual(EMBEDDING_CANCELLED);
    expect(calls).toEqual([2, 2, 2]);
  });

  it("sizes each call from the last one's time per token, to take about targetCallMs", async () => {
    let clock = 0;
    const calls: number[] = [];
    const embedder = new InputEmbedder(
      1024,
      tokenize,
      async (tokens) => {
        calls.push(tokens.length);
        clock += 0.01 * tokens.reduce((n, t) => n + t.length, 0); // 0.01 ms a token
        return { vectors: new Float32Array(tokens.length), dimensions: 1 };
      },
      { targetCallMs: 100, now: () => clock },
    );
    const r = await embedder.embed(Array.from({ length: 40 }, () => Array.from({ length: 500 }, () => 1)));
    // The first call holds MIN_CALL_TOKENS (one input of 500); 100 ms / 0.01 ms = 10,000 tokens fit a call, and
    // each call moves halfway there: 5,256 tokens (10 inputs), then 7,628 (15), then the 14 left.
    expect(calls).toEqual([1, 10, 15, 14]);
    expect(r).toMatchObject({ ok: true });
    // A call under half MIN_CALL_TOKENS sizes nothing; the next request goes on from 9,407 tokens (18 inputs).
    calls.length = 0;
    await embedder.embed([[1]]);
    await embedder.embed(Array.from({ length: 20 }, () => Array.from({ length: 500 }, () => 1)));
    expect(calls).toEqual([1, 18, 2]);
  });

  it('refuses an input longer than the context by its index, computing nothing', async () => {
    const { calls, vectors } = recording();
    const embedder = new InputEmbedder(4, tokenize, vectors);
    expect(await embedder.embed(['ok', 'too long'])).toEqual({
      ok: false,
      index: 1,
      reason: 'too_long',
      atLeastTokens: 8,
      contextSize: 4,
    });
    expect(calls).toEqual([]);
  });

  it('a failed call fails the requests it held, and the next ones still run', async () => {
    let fail = true;
    const embedder = new InputEmbedder(16, tokenize, async (tokens) => {
      if (fail) throw new Error('boom');
      return { vectors: new Float32Array(tokens.length), dimensions: 1 };
    });
    await expect(embedder.embed(['a'])).rejects.toThrow('boom');
    fail = false;
    expect(await embedder.embed(['a'])).toMatchObject({ ok: true, tokens: [1] });
  });
});

describe('instantVectors', () => {
  it('is a deterministic unit vector per input', async () => {
    const r = await instantVectors([], ['a', 'b', 'a', [1, 2]]);
    expect(r.dimensions).toBe(INSTANT_EMBEDDING_DIMENSIONS);
    const rows = Array.from({ length: 4 }, (_, i) =>
      Array.from(r.vectors.subarray(i * r.dimensions, (i + 1) * r.dimensions)),
    );
    for (const v of rows) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    expect(rows[0]).toEqual(rows[2]);
    expect(rows[0]).not.toEqual(rows[1]);
    expect(rows[0]).not.toEqual(rows[3]);
  });
});
