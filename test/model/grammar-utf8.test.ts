/**
 * Grammar jobs always produce valid UTF-8, whatever the weights: on random-weight GGUFs whose vocabularies
 * have byte-fallback tokens (the project's tiny llama, always written by the test, and ../shared/models'
 * llama-2-tiny-random with Llama 2's 32k vocabulary when present), a json_schema with free-text strings
 * bounded by minLength / maxLength (counted in characters) and a forced tool call with a free string argument
 * always complete, contain no U+FFFD, and validate with ajv, on both token engines. llama.cpp's grammar alone
 * takes any byte as a UTF-8 continuation, so without the engines' UTF-8 guard these fail.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectJob, disposeEngineSubjects, type EngineSubject } from '../helpers/engine-subjects.ts';
import { loadRandomWeightSubjects } from '../helpers/model-random-weights.ts';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_SAMPLING } from '../../src/engine/sampling-defaults.ts';
import type { FunctionTool } from '../../src/protocol/chat-request.ts';
import { jsonSchemaToGrammar } from '../../src/grammar/json-schema-grammar.ts';
import { toolCallGrammar } from '../../src/grammar/tool-call-grammar.ts';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../../src/protocol/tool-call-syntax.ts';
import { llamaTokenPieces } from '../../src/worker/llama-token-pieces.ts';

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];
const MAX_TOKENS = 256;

const NOTE_SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string', minLength: 2, maxLength: 16 },
    body: { type: 'string', maxLength: 32 },
    mood: { type: 'string', enum: ['calm', 'busy'] },
  },
  required: ['title', 'body', 'mood'],
  additionalProperties: false,
};
const NOTE_TOOL: FunctionTool = {
  name: 'save_note',
  parameters: {
    type: 'object',
    properties: { text: { type: 'string', minLength: 1, maxLength: 24 } },
    required: ['text'],
    additionalProperties: false,
  },
  strict: true,
};
const ajv = new Ajv2020({ strict: false });
const validNote = ajv.compile(NOTE_SCHEMA);
const validToolArgs = ajv.compile(NOTE_TOOL.parameters);

describe('grammar jobs write valid UTF-8 on random weights', () => {
  let llama: Llama;
  const subjects: EngineSubject[] = [];

  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    subjects.push(
      ...(await loadRandomWeightSubjects(
        llama,
        'grammar-utf8',
        [['tiny', await ensureTinyModel({ reply: null, seed: 4 })]],
        { contextSize: 512, slots: 2 },
      )),
    );
  });
  afterAll(async () => {
    await disposeEngineSubjects(subjects);
  });

  it("the node-llama-cpp engine knows every token's exact bytes", () => {
    const text = 'héllo wörld ✓ 𝄞 日本';
    for (const s of subjects) {
      const pieces = llamaTokenPieces(s.model);
      // Unknown bytes: only tokens whose vocabulary text holds U+FFFD itself (Llama 2 has "�" and "��").
      const texts = (s.model.fileInfo.metadata as { tokenizer: { ggml: { tokens: readonly string[] } } }).tokenizer.ggml
        .tokens;
      const unknown = pieces.flatMap((p, t) => (p === null ? [texts[t]!] : []));
      expect(
        unknown.filter((u) => !u.includes('\uFFFD')),
        s.name,
      ).toEqual([]);
      expect(unknown.length, s.name).toBeLessThan(5);
      expect(pieces[s.model.tokens.eos!], s.name).toBe('end');
      const tokens = s.model.tokenize(text, false);
      expect(
        tokens.some((t) => pieces[t] instanceof Uint8Array && pieces[t].length === 1 && pieces[t][0]! >= 0x80),
        `${s.name}: some byte tokens`,
      ).toBe(true);
      const written = Buffer.concat(tokens.map((t) => pieces[t] as Uint8Array));
      expect(written.toString('utf8').trimStart(), s.name).toBe(text);
    }
  });

  /**
   * Runs `grammar` for every model, engine and seed; returns what is wrong with each output (none expected)
   * and how many outputs have a non-ASCII character (the tiny vocabulary writes those only with byte tokens,
   * so some do: the guard bans invalid sequences, not multi-byte characters).
   */
  async function problems(
    grammar: string,
    check: (text: string) => string | undefined,
  ): Promise<{ found: string[]; nonAscii: number }> {
    const found: string[] = [];
    let nonAscii = 0;
    for (const s of subjects) {
      for (const [engineName, engine] of s.engines) {
        for (const seed of SEEDS) {
          const r = await collectJob(engine, {
            promptTokens: s.prompt,
            maxTokens: MAX_TOKENS,
            stops: [],
            grammar,
            sampling: { ...DEFAULT_SAMPLING, temperature: 1.5, seed },
          });
          const where = `${s.name} / ${engineName} / seed ${seed}: ${JSON.stringify(r.text)}`;
          let problem: string | undefined;
          if (r.error) problem = `error ${r.error.code}: ${r.error.message}`;
          else if (r.result?.finishReason !== 'stop') problem = `finish ${r.result?.finishReason}`;
          else if (r.text.includes('\uFFFD')) problem = 'U+FFFD in the text';
          else {
            try {
              problem = check(r.text);
            } catch (err) {
              problem = String(err);
            }
          }
          if (problem) found.push(`${where}: ${problem}`);
          if (/[^\x00-\x7F]/.test(r.text)) nonAscii++;
        }
      }
    }
    return { found, nonAscii };
  }

  it('json_schema with free-text minLength / maxLength strings: complete, no U+FFFD, valid (ajv)', async () => {
    const { found, nonAscii } = await problems(jsonSchemaToGrammar(NOTE_SCHEMA, { strict: true }), (text) =>
      validNote(JSON.parse(text)) ? undefined : ajv.errorsText(validNote.errors),
    );
    expect(found).toEqual([]);
    expect(nonAscii).toBeGreaterThan(0);
  });

  it('a forced tool call with a free string argument: complete, no U+FFFD, arguments valid (ajv)', async () => {
    const { found, nonAscii } = await problems(
      toolCallGrammar([NOTE_TOOL], { choice: 'required', parallel: false }),
      (text) => {
        if (!text.startsWith(`${TOOL_CALL_OPEN}\n`) || !text.endsWith(`\n${TOOL_CALL_CLOSE}`))
          return 'not one tool call';
        const call = JSON.parse(text.slice(TOOL_CALL_OPEN.length + 1, -TOOL_CALL_CLOSE.length - 1)) as {
          name: string;
          arguments: unknown;
        };
        if (call.name !== NOTE_TOOL.name) return `called ${call.name}`;
        return validToolArgs(call.arguments) ? undefined : ajv.errorsText(validToolArgs.errors);
      },
    );
    expect(found).toEqual([]);
    expect(nonAscii).toBeGreaterThan(0);
  });
});
