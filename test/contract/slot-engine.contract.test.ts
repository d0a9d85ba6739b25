import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyChatModel, ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { LlamaSequenceEngine } from '../../src/worker/llama-sequence-engine.ts';
import { loadNativeSlotEngine, nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';
import { PromptBuilder } from '../../src/worker/prompt-builder.ts';
import { DEFAULT_SAMPLING, type SamplingParams } from '../../src/engine/sampling-defaults.ts';
import type { SlotEngine, SlotJobResult } from '../../src/worker/slot-engine.ts';
import { submitJob, type TestJob } from '../helpers/generation-job.ts';
import type { TokenLogprob } from '../../src/protocol/chat-delta.ts';
import { jsonGrammar, OK_OBJECT_GRAMMAR } from '../helpers/grammars.ts';

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
  [
    'node-llama-cpp',
    async (_p, _l, model) =>
      LlamaSequenceEngine.load({ model, contextSize: CONTEXT, slots: SLOTS, threads: 1, batchSize: 256 }),
    true,
  ],
  [
    'native',
    async (modelPath) =>
      loadNativeSlotEngine({ modelPath, contextSize: CONTEXT, slots: SLOTS, threads: 1, batchSize: 256 }),
    native.ok,
  ],
];

it('the native addon is built where CI runs', () => {
  if (process.env.CI) expect(native).toEqual({ ok: true });
  else if (!native.ok) console.warn(`[slot-engine contract] native engine skipped: ${native.reason}`);
});

const greedy: SamplingParams = { ...DEFAULT_SAMPLING, temperature: 0 };

const JSON_GRAMMAR = jsonGrammar();

interface Run {
  text: string;
  result: SlotJobResult;
  pieces: number;
  prompt?: { promptTokens: number; cachedTokens: number };
  /** Every logprob entry received, in order; undefined when no onText call carried any. */
  logprobs?: TokenLogprob[];
}

function run(
  engine: SlotEngine,
  job: TestJob,
  onPiece?: (n: number) => void,
): { done: Promise<Run>; cancel: () => void } {
  let text = '';
  let pieces = 0;
  let prompt: Run['prompt'];
  let logprobs: TokenLogprob[] | undefined;
  let cancel = () => {};
  const done = new Promise<Run>((resolve, reject) => {
    const h = submitJob(engine, job, {
      onPrompt: (p) => {
        prompt = p;
      },
      onText: (t, _n, lp) => {
        text += t;
        pieces++;
        if (lp) (logprobs ??= []).push(...lp);
        onPiece?.(pieces);
      },
      onDone: (result) => resolve({ text, result, pieces, prompt, ...(logprobs ? { logprobs } : {}) }),
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
    const job = (tokens: Uint32Array, over: Partial<TestJob> = {}): TestJob => ({
      promptTokens: tokens,
      maxTokens: 64,
      stops: [],
      sampling: greedy,
      ...over,
    });

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
      expect(result.stop).toBeUndefined(); // ended by EOS, not by a stop string
    });

    it('stops at maxTokens with exactly that many tokens', async () => {
      const { result, text } = await run(chat, job(await hello(), { maxTokens: 2 })).done;
      expect(result).toMatchObject({ finishReason: 'length', completionTokens: 2 });
      expect(DEFAULT_TINY_REPLY.startsWith(text)).toBe(true);
    });

    it('stops before a stop string without emitting it, and says which one', async () => {
      const { text, result } = await run(chat, job(await hello(), { stops: ['tiny test'] })).done;
      expect(result.finishReason).toBe('stop');
      expect(text).toBe('Hello! I am a ');
      expect(result.stop).toBe('tiny test');
      const earliest = await run(chat, job(await hello(), { stops: ['model', ' am', 'zzz'] })).done;
      expect(earliest.text).toBe('Hello! I');
      expect(earliest.result.stop).toBe(' am');
    });

    it('is deterministic for a seed and varies across seeds', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'Once' }])).tokens;
      const sampled = (seed: number) =>
        run(
          endless,
          job(tokens, {
            maxTokens: 16,
            sampling: { ...DEFAULT_SAMPLING, temperature: 1.5, topK: 0, topP: 1, minP: 0, seed },
          }),
        ).done;
      const [a, b, c] = [await sampled(7), await sampled(7), await sampled(8)];
      expect(a.text).toBe(b.text);
      expect(a.result.completionTokens).toBe(16);
      expect(c.text).not.toBe(a.text);
    });

    it('runs a full batch of concurrent jobs, each correct', async () => {
      const runs = await Promise.all(
        Array.from(
          { length: SLOTS },
          async (_, i) => (await chatPrompt.build([{ role: 'user', content: `Question ${i}` }])).tokens,
        ),
      ).then((prompts) => prompts.map((t) => run(chat, job(t)).done));
      for (const r of await Promise.all(runs)) {
        expect(r.text).toBe(DEFAULT_TINY_REPLY);
        expect(r.result.finishReason).toBe('stop');
      }
    });

    it('cancel frees the slot; slots never leak across many cancels', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'go' }])).tokens;
      for (let round = 0; round < 3; round++) {
        const runs = Array.from({ length: SLOTS }, () => {
          const r = run(endless, job(tokens, { maxTokens: 100_000 }), (n) => {
            if (n === 3) r.cancel();
          });
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
      const tokens = (
        await chatPrompt.build([
          { role: 'system', content: system },
          { role: 'user', content: 'Say hello.' },
        ])
      ).tokens;
      const first = await run(chat, job(tokens)).done;
      const second = await run(chat, job(tokens)).done;
      expect(second.text).toBe(first.text);
      expect(second.prompt?.cachedTokens ?? second.result.cachedTokens).toBeGreaterThan(tokens.length / 2);
      expect(second.result.cachedTokens).toBeLessThan(tokens.length);
    });

    it('reuses a prefix only within its cache partition: another account reads no cached token of it, the owner still does (issue #28)', async () => {
      const secret = 'The secret launch code of the company is seven four two nine and the meeting is on Tuesday.';
      const build = async (system: string) =>
        (
          await chatPrompt.build([
            { role: 'system', content: system },
            { role: 'user', content: 'Say hello.' },
          ])
        ).tokens;
      const tokens = await build(secret);
      const variant = await build('The secret launch code of the company is seven four two one');
      const unrelated = await build('Something entirely different about dogs and cats in the garden today');
      const owner = await run(chat, job(tokens, { cachePartition: 'account:a' })).done;
      const same = await run(chat, job(tokens, { cachePartition: 'account:b' })).done;
      const sharedStart = await run(chat, job(variant, { cachePartition: 'account:c' })).done;
      // Two other accounts took the two other slots (a job with nothing to reuse takes the least recently used one).
      const again = await run(chat, job(tokens, { cachePartition: 'account:a' })).done;
      const other = await run(chat, job(unrelated, { cachePartition: 'account:d' })).done;
      // Each of those accounts had sent nothing before: none may read anything another one left.
      expect([same.result.cachedTokens, sharedStart.result.cachedTokens, other.result.cachedTokens]).toEqual([0, 0, 0]);
      expect(same.text).toBe(owner.text);
      expect(again.result.cachedTokens).toBeGreaterThan(tokens.length / 2);
      expect(again.text).toBe(owner.text);
      // An account's own repeat is its own hit.
      const otherAgain = await run(chat, job(unrelated, { cachePartition: 'account:d' })).done;
      expect(otherAgain.result.cachedTokens).toBeGreaterThan(unrelated.length / 2);
    });

    it('ends at the context limit with length, never crashing', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'go' }])).tokens;
      const { result } = await run(endless, job(tokens, { maxTokens: CONTEXT - tokens.length })).done;
      expect(result.finishReason).toBe('length');
      expect(result.promptTokens + result.completionTokens).toBeLessThanOrEqual(CONTEXT);
    });

    it('keeps a JSON grammar whatever the weights: every completed output parses, and EOG comes only when it is complete', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'Once' }])).tokens;
      let completed = 0;
      for (let seed = 1; seed <= 8; seed++) {
        const r = await run(
          endless,
          job(tokens, {
            maxTokens: 120,
            grammar: JSON_GRAMMAR,
            sampling: { ...DEFAULT_SAMPLING, temperature: 1, seed },
          }),
        ).done;
        expect(r.text.startsWith('{')).toBe(true);
        if (r.result.finishReason === 'stop') {
          completed++;
          expect(() => JSON.parse(r.text)).not.toThrow();
        } else {
          expect(r.result).toMatchObject({ finishReason: 'length', completionTokens: 120 });
        }
      }
      expect(completed).toBeGreaterThan(0); // the endless model never stops by itself: only the grammar ends it
    });

    it('ends a grammar-forced output exactly when the grammar is complete', async () => {
      const grammar = OK_OBJECT_GRAMMAR;
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'go' }])).tokens;
      for (const seed of [1, 2, 3]) {
        const r = await run(
          endless,
          job(tokens, { maxTokens: 64, grammar, sampling: { ...DEFAULT_SAMPLING, temperature: 1.2, seed } }),
        ).done;
        expect(r.result.finishReason).toBe('stop');
        expect(JSON.parse(r.text)).toHaveProperty('ok');
      }
    });

    it('ends a job with an invalid grammar with code invalid_grammar, and goes on serving', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'go' }])).tokens;
      for (const grammar of ['root ::= undefined_rule', 'root ::= "unterminated', 'notroot ::= "x"']) {
        await expect(run(endless, job(tokens, { maxTokens: 4, grammar })).done).rejects.toThrow(
          /^invalid_grammar: invalid grammar/,
        );
      }
      const after = await Promise.all(
        Array.from({ length: SLOTS }, () => run(endless, job(tokens, { maxTokens: 3 })).done),
      );
      for (const r of after) expect(r.result).toMatchObject({ finishReason: 'length', completionTokens: 3 });
    });

    it('reports logprobs only when asked: one finite entry <= 0 per token, alternatives sorted, greedy choice = top 1', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'Once' }])).tokens;
      const plain = await run(endless, job(tokens, { maxTokens: 12 })).done;
      expect(plain.logprobs).toBeUndefined();
      const asked = await run(endless, job(tokens, { maxTokens: 12, topLogprobs: 5 })).done;
      expect(asked.text).toBe(plain.text); // asking for logprobs does not change sampling
      const lp = asked.logprobs ?? [];
      expect(lp).toHaveLength(12);
      // A token holding part of a UTF-8 character shows U+FFFD as its text; whole-character tokens add up to the text.
      const partial = (e: TokenLogprob) => e.token.includes('\uFFFD');
      if (!lp.some(partial)) expect(lp.map((e) => e.token).join('')).toBe(asked.text);
      for (const e of lp) {
        expect(Number.isFinite(e.logprob)).toBe(true);
        expect(e.logprob).toBeLessThanOrEqual(0);
        if (!partial(e)) expect(e.bytes).toEqual([...Buffer.from(e.token, 'utf8')]);
        expect(e.top).toHaveLength(5);
        for (let i = 1; i < e.top.length; i++) expect(e.top[i]!.logprob).toBeLessThanOrEqual(e.top[i - 1]!.logprob);
        expect(e.top[0]!.token).toBe(e.token);
        expect(e.top[0]!.logprob).toBeCloseTo(e.logprob, 5);
      }
      const none = await run(endless, job(tokens, { maxTokens: 3, topLogprobs: 0 })).done;
      expect(none.logprobs?.map((e) => e.top.length)).toEqual([0, 0, 0]);
    });

    it('honours top_k, min_p and the repetition penalty', async () => {
      const tokens = (await endlessPrompt.build([{ role: 'user', content: 'Once' }])).tokens;
      const greedyText = (await run(endless, job(tokens, { maxTokens: 24 })).done).text;
      const hot = { ...DEFAULT_SAMPLING, temperature: 2, topP: 1, minP: 0, topK: 0 };
      const free = await run(endless, job(tokens, { maxTokens: 24, sampling: { ...hot, seed: 3 } })).done;
      expect(free.text).not.toBe(greedyText);
      // top_k 1 and min_p 1 both leave only the most likely token: greedy whatever the temperature.
      expect(
        (await run(endless, job(tokens, { maxTokens: 24, sampling: { ...hot, topK: 1, seed: 3 } })).done).text,
      ).toBe(greedyText);
      expect(
        (await run(endless, job(tokens, { maxTokens: 24, sampling: { ...hot, minP: 1, seed: 3 } })).done).text,
      ).toBe(greedyText);
      const penalised = await run(endless, job(tokens, { maxTokens: 24, sampling: { ...greedy, repeatPenalty: 100 } }))
        .done;
      expect(penalised.text).not.toBe(greedyText);
    });

    it('dispose is idempotent', async () => {
      const path = await ensureTinyChatModel();
      const e = await factory(path, llama, chatModel);
      await e.dispose();
      await e.dispose();
      const tokens = await hello();
      expect(() => submitJob(e, job(tokens), { onText() {}, onDone() {}, onError() {} })).toThrow();
    });
  });
});
