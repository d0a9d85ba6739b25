/**
 * Grammar-constrained sampling and logprobs of both token engines on random-weight GGUFs: the project's own
 * tiny llamas with several weight seeds (always written by the tests) and ../shared/models'
 * llama-2-tiny-random (32k Llama 2 vocabulary, byte tokens) when present. Whatever the weights, a grammar's
 * completed output parses; raw-distribution logprobs do not depend on sampler settings, and both engines
 * agree on them at temperature 0.
 */
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectJob, disposeEngineSubjects, type EngineSubject } from '../helpers/engine-subjects.ts';
import { loadRandomWeightSubjects } from '../helpers/model-random-weights.ts';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_SAMPLING, type SamplingParams } from '../../src/engine/sampling-defaults.ts';
import { jsonGrammar, OK_OBJECT_GRAMMAR } from '../helpers/grammars.ts';

const SLOTS = 3;
const CONTEXT = 512;
const JSON_GRAMMAR = jsonGrammar();
/** A bounded record: always complete within a few dozen tokens, so every run must end with 'stop'. */
const RECORD_GRAMMAR = [
  'root ::= "{" ws "\\"name\\":" ws name "," ws "\\"age\\":" ws age "," ws "\\"tags\\":" ws tags ws "}"',
  'name ::= "\\"" [a-zA-Z ]{1,12} "\\""',
  'age ::= [0-9] | [1-9] [0-9]',
  'tags ::= "[" ws ( tag ( "," ws tag ){0,2} )? ws "]"',
  'tag ::= "\\"red\\"" | "\\"green\\"" | "\\"blue\\""',
  'ws ::= [ ]?',
].join('\n');
const greedy: SamplingParams = { ...DEFAULT_SAMPLING, temperature: 0 };

describe('grammar and logprobs on random weights', () => {
  let llama: Llama;
  const subjects: EngineSubject[] = [];

  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const generated: Array<[string, string]> = [];
    for (const seed of [1, 2, 3]) generated.push([`tiny seed ${seed}`, await ensureTinyModel({ reply: null, seed })]);
    subjects.push(
      ...(await loadRandomWeightSubjects(llama, 'grammar-logprobs', generated, { contextSize: CONTEXT, slots: SLOTS })),
    );
  });
  afterAll(async () => {
    await disposeEngineSubjects(subjects);
  });

  it('every completed output of the JSON grammar parses, on every model and engine, for many seeds', async () => {
    // A JSON string admits almost any token, so on a 32k vocabulary random weights rarely close one within the
    // cap ('length' then); the tiny vocabulary's models do complete objects.
    const completed = new Map<string, number>();
    for (const s of subjects) {
      for (const [engineName, engine] of s.engines) {
        for (let seed = 1; seed <= 10; seed++) {
          const r = await collectJob(engine, {
            promptTokens: s.prompt,
            maxTokens: 96,
            stops: [],
            grammar: JSON_GRAMMAR,
            sampling: { ...DEFAULT_SAMPLING, temperature: 1, seed },
          });
          const where = `${s.name} / ${engineName} / seed ${seed}: ${JSON.stringify(r.text)}`;
          expect(r.error, where).toBeUndefined();
          expect(r.text.startsWith('{'), where).toBe(true);
          if (r.result?.finishReason === 'stop') {
            completed.set(engineName, (completed.get(engineName) ?? 0) + 1);
            expect(() => JSON.parse(r.text), where).not.toThrow();
          } else {
            expect(r.result?.finishReason, where).toBe('length');
          }
        }
      }
    }
    for (const [engineName] of subjects[0]!.engines)
      expect(completed.get(engineName) ?? 0, engineName).toBeGreaterThan(3);
  });

  it('a bounded grammar always completes, parses and has the declared shape, on every model and engine', async () => {
    for (const s of subjects) {
      for (const [engineName, engine] of s.engines) {
        for (const [seed, temperature] of [
          [1, 0],
          [2, 0.8],
          [3, 1.5],
          [4, 2],
        ] as const) {
          const r = await collectJob(engine, {
            promptTokens: s.prompt,
            maxTokens: 128,
            stops: [],
            grammar: RECORD_GRAMMAR,
            sampling: { ...DEFAULT_SAMPLING, temperature, seed },
          });
          const where = `${s.name} / ${engineName} / seed ${seed}: ${JSON.stringify(r.text)}`;
          expect(r.result?.finishReason, where).toBe('stop');
          const value = JSON.parse(r.text) as { name: string; age: number; tags: string[] };
          expect(Object.keys(value), where).toEqual(['name', 'age', 'tags']);
          expect(value.age, where).toBeLessThan(100);
          for (const tag of value.tags) expect(['red', 'green', 'blue'], where).toContain(tag);
        }
      }
    }
  });

  it('keeps each slot on its own grammar when jobs with different grammars and none run together', async () => {
    for (const s of subjects) {
      for (const [engineName, engine] of s.engines) {
        const sampling = { ...DEFAULT_SAMPLING, temperature: 1, seed: 5 };
        const [record, ok, free] = await Promise.all([
          collectJob(engine, { promptTokens: s.prompt, maxTokens: 128, stops: [], grammar: RECORD_GRAMMAR, sampling }),
          collectJob(engine, {
            promptTokens: s.prompt,
            maxTokens: 64,
            stops: [],
            grammar: OK_OBJECT_GRAMMAR,
            sampling,
          }),
          collectJob(engine, { promptTokens: s.prompt, maxTokens: 16, stops: [], sampling: greedy }),
        ]);
        const alone = await collectJob(engine, { promptTokens: s.prompt, maxTokens: 16, stops: [], sampling: greedy });
        expect(Object.keys(JSON.parse(record.text) as object), `${s.name} / ${engineName}`).toEqual([
          'name',
          'age',
          'tags',
        ]);
        expect(Object.keys(JSON.parse(ok.text) as object), `${s.name} / ${engineName}`).toEqual(['ok']);
        expect(free.text, `${s.name} / ${engineName}`).toBe(alone.text);
      }
    }
  });

  it('logprobs are the raw distribution: sampler settings that keep the greedy choice do not change them', async () => {
    for (const s of subjects) {
      for (const [engineName, engine] of s.engines.filter(([n]) => n === 'native')) {
        const base = await collectJob(engine, {
          promptTokens: s.prompt,
          maxTokens: 16,
          stops: [],
          sampling: greedy,
          topLogprobs: 3,
        });
        // top-k 1 at temperature 2 with penalties off picks the same tokens; the reported figures stay raw.
        const hot = await collectJob(engine, {
          promptTokens: s.prompt,
          maxTokens: 16,
          stops: [],
          sampling: { ...DEFAULT_SAMPLING, temperature: 2, topK: 1, seed: 9 },
          topLogprobs: 3,
        });
        expect(hot.text, `${s.name} / ${engineName}`).toBe(base.text);
        expect(hot.logprobs, `${s.name} / ${engineName}`).toEqual(base.logprobs);
        // The addon reports each token's raw bytes: together they are exactly the completion's UTF-8.
        expect(Buffer.from(base.logprobs.flatMap((e) => e.bytes)).toString('utf8')).toBe(base.text);
      }
    }
  });

  it('both engines report the same logprobs for the same greedy completion', async () => {
    for (const s of subjects) {
      if (s.engines.length < 2) continue;
      const [a, b] = await Promise.all(
        s.engines.map(([, e]) =>
          collectJob(e, { promptTokens: s.prompt, maxTokens: 16, stops: [], sampling: greedy, topLogprobs: 4 }),
        ),
      );
      expect(a!.text).toBe(b!.text);
      expect(a!.logprobs).toHaveLength(b!.logprobs.length);
      a!.logprobs.forEach((x, i) => {
        const y = b!.logprobs[i]!;
        expect(x.logprob).toBeCloseTo(y.logprob, 3);
        expect(x.top.map((t) => t.logprob)).toEqual(y.top.map((t) => expect.closeTo(t.logprob, 3)));
      });
    }
  });
});
