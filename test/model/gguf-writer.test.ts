/**
 * The generated GGUFs load and run in llama.cpp (through node-llama-cpp): tokenizer round trip,
 * finite greedy generation, the embedded chat template, and the realistic-size model.
 * The tiny-model tests need nothing outside the repo; the realistic one needs the Llama 2 tokenizer
 * source in /work/shared/models and is skipped (visibly) without it.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getLlama,
  JinjaTemplateChatWrapper,
  LlamaChatSession,
  resolveChatWrapper,
  type Llama,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import { CHATML_TEMPLATE } from '../../models/chat-templates.ts';
import { DEFAULT_TOKENIZER_SOURCE } from '../../models/realistic-llama.ts';
import { ensureRealisticModel, ensureTinyChatModel, ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { TINY_BOS_ID } from '../../models/tiny-vocab.ts';

let llama: Llama;
const models: LlamaModel[] = [];

beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
}, 180_000);
afterAll(async () => {
  for (const model of models) await model.dispose();
  await llama?.dispose();
});

async function load(path: string): Promise<LlamaModel> {
  const model = await llama.loadModel({ modelPath: path });
  models.push(model);
  return model;
}

/** Greedy generation of `count` tokens, checking every step's distribution is finite and sums to 1. */
async function generate(model: LlamaModel, prompt: Token[], count: number): Promise<Token[]> {
  const context = await model.createContext({ contextSize: 256, sequences: 1, threads: 1 });
  try {
    const out: Token[] = [];
    const sequence = context.getSequence();
    for await (const step of sequence.evaluateWithMetadata(prompt, { probabilities: true }, { temperature: 0 })) {
      let sum = 0;
      for (const p of step.probabilities.values()) {
        expect(Number.isFinite(p)).toBe(true);
        sum += p;
      }
      expect(sum).toBeGreaterThan(0.99);
      expect(sum).toBeLessThan(1.01);
      out.push(step.token);
      if (out.length >= count) break;
    }
    return out;
  } finally {
    await context.dispose();
  }
}

describe('tiny llama in llama.cpp', () => {
  let model: LlamaModel;
  beforeAll(async () => {
    model = await load(await ensureTinyModel());
  }, 180_000);

  it('loads with the written shape and vocabulary', () => {
    expect(model.trainContextSize).toBe(2048);
    expect(model.fileInsights.totalLayers).toBeGreaterThanOrEqual(2);
    expect(model.tokens.bos).toBe(TINY_BOS_ID);
    expect(model.tokens.eos).toBe(2);
  });

  it('tokenizes any text and detokenizes it back', () => {
    for (const text of [
      'Hello world, the quick brown fox!',
      'héllo ☃ 日本 🙂\n\ttabs  two  spaces',
      'x',
      '<|im_start|>user',
    ]) {
      const tokens = model.tokenize(text);
      expect(model.detokenize(tokens)).toBe(text);
    }
    const words = model.tokenize('Hello world');
    expect(words).toHaveLength(2); // whole-word pieces, not characters
    expect(model.tokenize('<|im_start|>', true)).toHaveLength(1); // control token when special tokens are on
    expect(model.tokenize('<|im_start|>', false).length).toBeGreaterThan(1); // plain text otherwise
  });

  it('generates finite, deterministic gibberish without EOS after a prompt not ending in a newline', async () => {
    const prompt = model.tokenize('Once upon a time there was a');
    const first = await generate(model, prompt, 48);
    expect(first).toHaveLength(48); // no EOS: runs to the limit
    expect(await generate(model, prompt, 48)).toEqual(first);
    expect(new Set(first).size).toBeGreaterThan(10);
  }, 180_000);

  it('replies the scripted text and then EOS after a prompt ending in a newline', async () => {
    const tokens = await generate(model, model.tokenize('Write a story.\n'), 48);
    expect(model.detokenize(tokens)).toBe(DEFAULT_TINY_REPLY);
    expect(tokens.length).toBeLessThan(48); // stopped at EOS
  }, 180_000);

  it('does not start the script when the prompt merely ends with the reply text', async () => {
    expect(await generate(model, model.tokenize(DEFAULT_TINY_REPLY), 24)).toHaveLength(24);
  }, 180_000);

  it('with reply: null, never stops, even after a newline', async () => {
    const unscripted = await load(await ensureTinyModel({ reply: null }));
    expect(await generate(unscripted, unscripted.tokenize('Write a story.\n'), 32)).toHaveLength(32);
  }, 180_000);
});

describe('tiny llama with an embedded chat template', () => {
  let chatModel: LlamaModel;
  let plainModel: LlamaModel;
  beforeAll(async () => {
    chatModel = await load(await ensureTinyChatModel());
    plainModel = await load(await ensureTinyModel());
  }, 180_000);

  it('exposes the template, and node-llama-cpp resolves a ChatML wrapper from it', () => {
    expect(chatModel.fileInfo.metadata.tokenizer.chat_template).toBe(CHATML_TEMPLATE);
    expect(plainModel.fileInfo.metadata.tokenizer.chat_template).toBeUndefined();
    expect(resolveChatWrapper(chatModel).wrapperName).toBe('ChatML');
    expect(resolveChatWrapper(plainModel).wrapperName).not.toBe('ChatML');
  });

  it('renders conversations with the template and tokenizes its control tokens as single tokens', () => {
    const wrapper = new JinjaTemplateChatWrapper({
      template: chatModel.fileInfo.metadata.tokenizer.chat_template!,
      tokenizer: chatModel.tokenizer,
    });
    const { contextText } = wrapper.generateContextState({
      chatHistory: [
        { type: 'system', text: 'Be brief.' },
        { type: 'user', text: 'Hello there' },
        { type: 'model', response: [] },
      ],
    });
    expect(contextText.toString()).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n',
    );
    const tokens = contextText.tokenize(chatModel.tokenizer);
    const start = chatModel.tokenize('<|im_start|>', true)[0]!;
    const end = chatModel.tokenize('<|im_end|>', true)[0]!;
    expect(tokens.filter((t) => t === start)).toHaveLength(3);
    expect(tokens.filter((t) => t === end)).toHaveLength(2);
  });

  it('runs chat turns through the resolved template: the scripted reply, stopped by EOS or max tokens', async () => {
    const context = await chatModel.createContext({ contextSize: 512, threads: 1 });
    try {
      const sequence = context.getSequence();
      const session = new LlamaChatSession({ contextSequence: sequence });
      expect(await session.prompt('Hello there', { maxTokens: 32, temperature: 0 })).toBe(DEFAULT_TINY_REPLY);
      expect(await session.prompt('And again?', { maxTokens: 32, temperature: 0.8, seed: 7 })).toBe(DEFAULT_TINY_REPLY);
      expect(await session.prompt('Short, please', { maxTokens: 1, temperature: 0 })).toBe('Hello! I'); // reply pieces: 'Hello! I' | ' am a tiny' | ' test model.'
      const start = chatModel.tokenize('<|im_start|>', true)[0]!;
      expect(sequence.contextTokens.filter((t) => t === start).length).toBeGreaterThanOrEqual(2);
    } finally {
      await context.dispose();
    }
  }, 180_000);
});

describe.skipIf(!existsSync(DEFAULT_TOKENIZER_SOURCE))(
  'realistic llama (56M Q8_0, Llama 2 tokenizer; needs /work/shared/models)',
  () => {
    let model: LlamaModel;
    beforeAll(async () => {
      const started = performance.now();
      const path = await ensureRealisticModel();
      const { size } = await stat(path);
      console.log(
        `realistic model ready in ${(performance.now() - started).toFixed(0)} ms: ${path} (${(size / 2 ** 20).toFixed(1)} MiB)`,
      );
      model = await load(path);
    }, 180_000);

    it('loads with the real Llama 2 vocabulary and generates a few finite tokens', async () => {
      expect(model.fileInfo.metadata.tokenizer.ggml.tokens).toHaveLength(32000);
      expect(model.trainContextSize).toBe(2048);
      expect(model.tokenize('Hello world')).toEqual([15043, 3186]); // ▁Hello, ▁world in Llama 2
      const tokens = await generate(model, model.tokenize('The capital of France is'), 4);
      expect(tokens).toHaveLength(4);
    }, 180_000);
  },
);
