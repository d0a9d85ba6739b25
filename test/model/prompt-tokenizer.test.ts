/**
 * The worker's prompt tokenizer (src/worker/prompt-tokenizer.ts) on real SentencePiece vocabularies: the
 * project's tiny chat model (always) and stories260K (where ../shared/models has it). It must give exactly
 * node-llama-cpp's tokens for any text (it only cuts where no token can span the cut), and stop at its limit.
 */
import fc from 'fast-check';
import {
  getLlama,
  LlamaLogLevel,
  LlamaText,
  SpecialToken,
  SpecialTokensText,
  type Llama,
  type LlamaModel,
} from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyChatModel } from '../../models/test-model-path.ts';
import { PromptBuilder } from '../../src/worker/prompt-builder.ts';
import { InvalidPromptToken, PromptTokenizer, PromptTooLong } from '../../src/worker/prompt-tokenizer.ts';
import { realTestModel } from '../helpers/test-model.ts';

let llama: Llama;
const models: Array<[string, LlamaModel]> = [];

beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
  models.push(['tiny chat model', await llama.loadModel({ modelPath: await ensureTinyChatModel(), vocabOnly: true })]);
  const real = realTestModel();
  if (real) models.push(['stories260K', await llama.loadModel({ modelPath: real, vocabOnly: true })]);
});

afterAll(async () => {
  for (const [, m] of models) await m.dispose();
  await llama?.dispose();
});

const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** Text made of vocabulary words, spaces, newlines, emoji, CJK, accents and lone ASCII: the cut points and their neighbours. */
const fragment = fc.constantFrom(
  'the',
  ' the',
  ' quick brown fox',
  'a',
  ' ',
  '  ',
  '\n',
  '\n\n',
  '\t',
  '😀',
  '👍🏽',
  '漢字',
  'é',
  'naïve',
  '▁',
  '<0x41>',
  '.',
  ',',
  '123',
  'Hello!',
  '\u0301',
);
const mixedText = fc
  .oneof(
    fc.array(fragment, { maxLength: 40 }),
    fc.array(fragment, { minLength: 300, maxLength: 1500, size: 'max' }), // several pieces of PIECE_BYTES
  )
  .map((parts) => parts.join(''));
/** Mostly vocabulary words (few cut points), long enough to be cut: a cut in the wrong place changes tokens. */
const wordyText = fc
  .array(fc.constantFrom(' the', ' quick', ' brown', ' fox', 'ing', '\n', '😀', ' a', 'é'), {
    minLength: 600,
    maxLength: 1200,
    size: 'max',
  })
  .map((p) => p.join(''));

describe('PromptTokenizer', () => {
  it("gives exactly node-llama-cpp's tokens for any text, also across its cut points", async () => {
    for (const [, model] of models) {
      const tokenizer = new PromptTokenizer(model);
      await fc.assert(
        fc.asyncProperty(fc.oneof(mixedText, wordyText), async (text) => {
          const llamaText = LlamaText([new SpecialToken('BOS'), text]);
          const expected = llamaText.tokenize(model.tokenizer);
          expect(Array.from(await tokenizer.tokenize(llamaText, NO_LIMIT))).toEqual(expected);
        }),
        { seed: 20261122, numRuns: 60 },
      );
    }
  });

  it('matches on long runs of characters outside the vocabulary, with special-token text around them', async () => {
    for (const [, model] of models) {
      const tokenizer = new PromptTokenizer(model);
      const run = `${'😀'.repeat(3000)} and then ${'漢'.repeat(2500)}x`;
      const text = LlamaText([
        new SpecialTokensText('<|im_start|>'),
        'user\n',
        run,
        new SpecialTokensText('<|im_end|>'),
        '\n',
      ]);
      expect(Array.from(await tokenizer.tokenize(text, NO_LIMIT))).toEqual(text.tokenize(model.tokenizer));
    }
  });

  it('the chat prompt of PromptBuilder is the chat template tokenized the usual way', async () => {
    for (const [, model] of models) {
      const builder = new PromptBuilder(model);
      const messages = [
        { role: 'system' as const, content: 'Be brief.' },
        { role: 'user' as const, content: `Hi 😀 ${'🙂'.repeat(700)} there` },
      ];
      const state = builder.wrapper.generateContextState({
        chatHistory: [
          { type: 'system', text: 'Be brief.' },
          { type: 'user', text: messages[1]!.content },
          { type: 'model', response: [] },
        ],
      });
      expect(Array.from((await builder.build(messages)).tokens)).toEqual(state.contextText.tokenize(model.tokenizer));
    }
  });

  it('stops at its limit with PromptTooLong (150,000 emoji, 600 KB), having counted past it', async () => {
    for (const [, model] of models) {
      const tokenizer = new PromptTokenizer(model);
      const err = await tokenizer.tokenize(LlamaText(['😀'.repeat(150_000)]), 2047).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PromptTooLong);
      expect((err as PromptTooLong).atLeastTokens).toBeGreaterThan(2047);
    }
  });

  it('tokenizes 150,000 emoji completely when no limit applies (4 byte tokens each)', async () => {
    const [, model] = models[0]!;
    const tokens = await new PromptTokenizer(model).tokenize(LlamaText(['😀'.repeat(150_000)]), NO_LIMIT);
    expect(tokens.length).toBe(600_000);
    expect(Array.from(tokens.subarray(0, 8))).toEqual(model.tokenize('😀😀', false, 'trimLeadingSpace'));
  });
});

describe('PromptBuilder.buildRaw (legacy completions: no chat template)', () => {
  it('tokenizes the text as it is, after BOS when the vocabulary asks for one, with no template stops', async () => {
    for (const [, model] of models) {
      const builder = new PromptBuilder(model);
      const text = 'Once upon a time, there was a fox';
      const raw = await builder.buildRaw(text);
      const bos = model.tokens.shouldPrependBosToken && model.tokens.bos !== null ? [model.tokens.bos] : [];
      expect(Array.from(raw.tokens)).toEqual([...bos, ...model.tokenize(text, false, 'trimLeadingSpace')]);
      expect(raw.stops).toEqual([]);
      const templated = await builder.build([{ role: 'user', content: text }]);
      expect(Array.from(raw.tokens)).not.toEqual(Array.from(templated.tokens));
    }
  });

  it('takes token ids as they are, refuses one outside the vocabulary, and stops at the limit', async () => {
    for (const [, model] of models) {
      const builder = new PromptBuilder(model);
      expect(Array.from((await builder.buildRaw([3, 4, 5])).tokens)).toEqual([3, 4, 5]);
      const size = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
      await expect(builder.buildRaw([3, size])).rejects.toBeInstanceOf(InvalidPromptToken);
      expect(Array.from((await builder.buildRaw([size - 1])).tokens)).toEqual([size - 1]);
      await expect(builder.buildRaw([1, 2, 3], 2)).rejects.toBeInstanceOf(PromptTooLong);
      await expect(builder.buildRaw('the quick brown fox '.repeat(50), 10)).rejects.toBeInstanceOf(PromptTooLong);
    }
  });
});
