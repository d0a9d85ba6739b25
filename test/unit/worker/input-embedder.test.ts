import { describe, expect, it } from 'vitest';
import type { RawPrompt } from '../../../src/protocol/chat-request.ts';
import {
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
