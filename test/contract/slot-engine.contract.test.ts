import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyChatModel, ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { LlamaSequenceEngine } from '../../src/worker/llama-sequence-engine.ts';
import { loadNativeSlotEngine, nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';
import { PromptBuilder } from '../../src/worker/prompt-builder.ts';
import { DEFAULT_SAMPLING, type SamplingParams } from '../../src/engine/sampling-defaults.ts';
import type { SlotEngine, SlotJob, SlotJobResult } from '../../src/worker/slot-engine.ts';

/**
 * One contract for both token engines: the native continuous-batching loop and node-llama-cpp's sequences.
 * Runs on the project's own tiny GGUFs (the chat one answers DEFAULT_TINY_REPLY greedily and stops; the
 * other never stops). In CI the native addon must be built: its absence fails there instead of skipping.
 */
const SLOTS = 3;
const CONTEXT = 512;

type EngineFactory = (modelPath: string, llama: Llama, model: LlamaModel) => Promise<SlotEngine>;
const native = nativeAddonAvailable();
const engines: Array<[string, EngineFactory, boolean]> = [
  ['node-llama-cpp', async (_p, _l, model) => LlamaSequenceEngine.load({ model, contextSize: CONTEXT, slots: SLOTS, threads: 1, batchSize: 256 }), true],
  ['native', async (modelPath) => loadNativeSlotEngine({ modelPath, contextSize: CONTEXT, slots: SLOTS, threads: 1, batchSize: 256 }), native.ok],
];

it('the native addon is built where CI runs', () => {
  if (process.env.CI) expect(native).toEqual({ ok: true });
  else if (!native.ok) console.warn(`[slot-engine contract] native engine skipped: ${native.reason}`);
});

const greedy: SamplingParams = { ...DEFAULT_SAMPLING, temperature: 0 };

interface Run {
  text: string;
  result: SlotJobResult;
  pieces: number;
  prompt?: { promptTokens: number; cachedTokens: number };
}

function run(engine: SlotEngine, job: SlotJob, onPiece?: (n: number) => void): { done: Promise<Run>; cancel: () => void } {
  let text = '';
  let pieces = 0;
  let prompt: Run['prompt'];
  let cancel = () => {};
  const done = new Promise<Run>((resolve, reject) => {
    const h = engine.submit(job, {
      onPrompt: (p) => { prompt = p; },
      onText: (t) => { text += t; pieces++; onPiece?.(pieces); },
      onDone: (result) => resolve({ text, result, pieces, prompt }),
      onError: (e) => reject(new Error(`${e.code}: ${e.message}`)),
    });
    cancel = () => h.cancel();
  });
  return { done, cancel: () => cancel() };
}

describe.each(engines)('%s engine', (_name, factory, available) => {
  const suite = available ? describe : describe.skip;
  suite('contract', () => {
    let llama: Llama;
    let chatModel: LlamaModel;
    let endlessModel: LlamaModel;
    let chat: SlotEngine;
    let endless: SlotEngine;
    let chatPrompt: PromptBuilder;
    let endlessPrompt: PromptBuilder;
    const job = (tokens: Uint32Array, over: Partial<SlotJob> = {}): SlotJob => ({ promptTokens: tokens, maxTokens: 64, stop: [], sampling: greedy, ...over });

    beforeAll(async () => {
      const chatPath = await ensureTinyChatModel();
      const endlessPath = await ensureTinyModel({ reply: null });
      llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
      chatModel = await llama.loadModel({ modelPath: chatPath });
      endlessModel = await llama.loadModel({ modelPath: endlessPath });
      chat = await factory(chatPath, llama, chatModel);
      endless = await factory(endlessPath, llama, endlessModel);
      chatPrompt = new PromptBuilder(chatModel);
      endlessPrompt = new PromptBuilder(endlessModel);
    });
    afterAll(async () => {
      await chat?.dispose();
      await endless?.dispose();
      await chatModel?.dispose();
      await endlessModel?.dispose();
    });

    const hello = async () => (await chatPrompt.build([{ role: 'user', content: 'Say hello.' }])).tokens;

    it('reports its shape', () => {
      expect(chat.slotCount).toBe(SLOTS);
      expect(chat.contextSize).toBe(CONTEXT);
    });

    it('answers greedily with the scripted reply and stops on end of generation', async () => {
      const { text, result } = await run(chat, job(await hello())).done;
      expect(text).toBe(DEFAULT_TINY_REPLY);
      expect(result.finishReason).toBe('stop');
      expect(result.completionTokens).toBe(3); // the scripted reply: 3 tokens, then EOS
      expect(result.promptTokens).toBe((await hello()).length);
    });

    it('stops at maxTokens with exactly that many tokens', async () => {
      const { result, text } = await run(chat, job(await hello(), { maxTokens: 2 })).done;
      expect(result).toMatchObject({ finishReason: 'length', completionTokens: 2 });
      expect(DEFAULT_TINY_REPLY.startsWith(text)).toBe(true);
    });

    it('stops before a stop string without emitting it', async () => {
      const { text, result } = await run(chat, job(await hello(), { stop: ['tiny test'] })).done;
      expect(result.finishReason).toBe('stop');
      expect(text).toBe('Hello! I am a ');
    });

    it('is deterministic for a seed and varies across seeds', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'Once' }])).tokens;
      const sampled = (seed: number) => run(endless, job(tokens, { maxTokens: 16, sampling: { ...DEFAULT_SAMPLING, temperature: 1.5, topK: 0, topP: 1, minP: 0, seed } })).done;
      const [a, b, c] = [await sampled(7), await sampled(7), await sampled(8)];
      expect(a.text).toBe(b.text);
      expect(a.result.completionTokens).toBe(16);
      expect(c.text).not.toBe(a.text);
    });

    it('runs a full batch of concurrent jobs, each correct', async () => {
      const runs = await Promise.all(Array.from({ length: SLOTS }, async (_, i) => (await chatPrompt.build([{ role: 'user', content: `Question ${i}` }])).tokens)).then((prompts) => prompts.map((t) => run(chat, job(t)).done));
      for (const r of await Promise.all(runs)) {
        expect(r.text).toBe(DEFAULT_TINY_REPLY);
        expect(r.result.finishReason).toBe('stop');
      }
    });

    it('cancel frees the slot; slots never leak across many cancels', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'go' }])).tokens;
      for (let round = 0; round < 3; round++) {
        const runs = Array.from({ length: SLOTS }, () => {
          const r = run(endless, job(tokens, { maxTokens: 100_000 }), (n) => { if (n === 3) r.cancel(); });
          return r;
        });
        for (const r of await Promise.all(runs.map((x) => x.done))) {
          expect(r.result.finishReason).toBe('cancelled');
          expect(r.result.completionTokens).toBeLessThan(1000);
        }
      }
      const after = await run(endless, job(tokens, { maxTokens: 5 })).done;
      expect(after.result).toMatchObject({ finishReason: 'length', completionTokens: 5 });
    });

    it('reuses a cached prefix and gives the same greedy answer', async () => {
      const system = 'You are a helpful assistant that always answers in one short sentence, politely.';
      const tokens = (await chatPrompt.build([{ role: 'system', content: system }, { role: 'user', content: 'Say hello.' }])).tokens;
      const first = await run(chat, job(tokens)).done;
      const second = await run(chat, job(tokens)).done;
      expect(second.text).toBe(first.text);
      expect(second.prompt?.cachedTokens ?? second.result.cachedTokens).toBeGreaterThan(tokens.length / 2);
      expect(second.result.cachedTokens).toBeLessThan(tokens.length);
    });

    it('ends at the context limit with length, never crashing', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'go' }])).tokens;
      const { result } = await run(endless, job(tokens, { maxTokens: CONTEXT - tokens.length })).done;
      expect(result.finishReason).toBe('length');
      expect(result.promptTokens + result.completionTokens).toBeLessThanOrEqual(CONTEXT);
    });

    it('dispose is idempotent', async () => {
      const path = await ensureTinyChatModel();
      const e = await factory(path, llama, chatModel);
      await e.dispose();
      await e.dispose();
      const tokens = await hello();
      expect(() => e.submit(job(tokens), { onText() {}, onDone() {}, onError() {} })).toThrow();
    });
  });
});
