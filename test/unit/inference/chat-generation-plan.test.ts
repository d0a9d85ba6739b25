import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/index.ts';
import { planChatGeneration } from '../../../src/inference/chat-generation-plan.ts';
import { GrammarCache } from '../../../src/grammar/grammar-cache.ts';
import { validateResponsesRequest } from '../../../src/protocol/responses-request.ts';
import { validateChatRequest } from '../../../src/protocol/validate-chat-request.ts';
import { sampleGbnf } from '../../helpers/gbnf-sampler.ts';

const base = { model: 'local/m', messages: [{ role: 'user', content: 'hi' }] };
const tool = (name: string, parameters?: object) => ({ type: 'function', function: { name, parameters } });
const plan = (body: object, cache = new GrammarCache()) =>
  planChatGeneration(validateChatRequest({ ...base, ...body }), cache);

describe('planChatGeneration', () => {
  it('a plain request: no grammar, no tools, no logprobs; sampler fields passed on', () => {
    const p = plan({
      temperature: 0.3,
      top_k: 5,
      min_p: 0.1,
      repetition_penalty: 1.2,
      seed: 4,
      stop: 'x',
      max_tokens: 9,
    });
    expect(p.toolNames).toBeNull();
    expect(p.generation).toMatchObject({
      grammar: undefined,
      tools: undefined,
      topLogprobs: undefined,
      temperature: 0.3,
      topK: 5,
      minP: 0.1,
      repetitionPenalty: 1.2,
      seed: 4,
      stop: ['x'],
      maxTokens: 9,
    });
  });

  it('json_schema: the schema grammar (cached per schema text)', () => {
    const cache = new GrammarCache();
    const body = {
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'o',
          schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        },
      },
    };
    const p = plan(body, cache);
    expect(JSON.parse(sampleGbnf(p.generation.grammar!, 1))).toHaveProperty('ok');
    expect(plan(body, cache).generation.grammar).toBe(p.generation.grammar);
    expect(cache.size).toBe(1);
  });

  it('json_object: a grammar for any object', () => {
    expect(plan({ response_format: { type: 'json_object' } }).generation.grammar).toContain('root ::= object');
  });

  it('tools with auto: tools shown, no grammar, calls parsed; none: neither', () => {
    const auto = plan({ tools: [tool('f'), tool('g')] });
    expect(auto.generation.grammar).toBeUndefined();
    expect(auto.generation.tools!.map((t) => t.name)).toEqual(['f', 'g']);
    expect([...auto.toolNames!]).toEqual(['f', 'g']);
    const none = plan({ tools: [tool('f')], tool_choice: 'none' });
    expect(none.generation.tools).toBeUndefined();
    expect(none.toolNames).toBeNull();
  });

  it('required and named choices force calls, and win over response_format', () => {
    const required = plan({
      tools: [tool('f'), tool('g')],
      tool_choice: 'required',
      response_format: { type: 'json_object' },
    });
    expect(sampleGbnf(required.generation.grammar!, 2)).toMatch(/^<tool_call>\n\{"name": "(f|g)", "arguments": /);
    const named = plan({
      tools: [tool('f'), tool('g')],
      tool_choice: { type: 'function', function: { name: 'g' } },
      parallel_tool_calls: false,
    });
    for (let seed = 1; seed < 10; seed++)
      expect(sampleGbnf(named.generation.grammar!, seed)).toMatch(
        /^<tool_call>\n\{"name": "g", "arguments": \{.*\}\}\n<\/tool_call>$/s,
      );
  });

  it('logprobs: topLogprobs passed on', () => {
    expect(plan({ logprobs: true, top_logprobs: 4 }).generation.topLogprobs).toBe(4);
  });

  it('a schema keyword the converter cannot express is a 400 naming it and the field', () => {
    const err = (body: object) => {
      try {
        plan(body);
      } catch (e) {
        return e as ApiError;
      }
      throw new Error('expected an error');
    };
    const e1 = err({
      response_format: { type: 'json_schema', json_schema: { name: 'o', schema: { type: 'string', pattern: 'a' } } },
    });
    expect(e1).toMatchObject({
      status: 400,
      param: 'response_format.json_schema.schema',
      code: 'unsupported_schema_keyword',
    });
    expect(e1.message).toContain("'pattern'");
    const e2 = err({ tools: [tool('f', { type: 'object', properties: { a: { not: {} } } })], tool_choice: 'required' });
    expect(e2).toMatchObject({ status: 400, param: 'tools', code: 'unsupported_schema_keyword' });
    expect(e2.message).toContain('tools[0] (f)');
  });

  it('a schema error names the field the caller sent it in: text.format.schema through the Responses API', () => {
    const err = (format: object) => {
      try {
        planChatGeneration(
          validateResponsesRequest({ model: 'local/m', input: 'hi', text: { format } }).chat,
          new GrammarCache(),
        );
      } catch (e) {
        return e as ApiError;
      }
      throw new Error('expected an error');
    };
    const e1 = err({ type: 'json_schema', name: 'o', schema: { type: 'string', pattern: 'a' } });
    expect(e1).toMatchObject({ status: 400, param: 'text.format.schema', code: 'unsupported_schema_keyword' });
    expect(e1.message).toContain("'pattern'");
    const e2 = err({ type: 'json_schema', name: 'o', schema: { type: 'array', maxItems: 5000 } });
    expect(e2).toMatchObject({ status: 400, param: 'text.format.schema' });
  });
});
