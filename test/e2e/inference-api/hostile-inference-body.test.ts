import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';

/**
 * Hostile request bodies on the shared endpoint (chat completions and the Responses API), each defect found by
 * attacking `hearth serve` on the tiny chat model with its regression test here. Every request is bounded by
 * an abort signal (a hang fails the test instead of stalling it); after each group the process is alive, a
 * plain chat request completes, and no generation is left running or waiting.
 */
let hearth: HearthProcess;
const MODEL_ID = 'local/tiny-chat';
/** A request that has not answered by then is hung (the tiny model answers in milliseconds). */
const HANG_BOUND_MS = 20_000;

beforeAll(async () => {
  hearth = (await serveModel(MODEL_ID)).hearth;
});
afterAll(() => hearth?.stop());

type ErrorBody = { error: { message: string; type: string; param: string | null; code: string | null } };

async function post(
  route: 'chat/completions' | 'responses',
  body: unknown,
): Promise<{ status: number; body: ErrorBody & Record<string, unknown> }> {
  const r = await fetch(`${hearth.baseUrl}/api/inference/v1/${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(HANG_BOUND_MS),
  });
  return { status: r.status, body: (await r.json()) as ErrorBody & Record<string, unknown> };
}

const chat = (fields: Record<string, unknown>) =>
  post('chat/completions', { model: MODEL_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, ...fields });
const withSchema = (schema: unknown) =>
  chat({ response_format: { type: 'json_schema', json_schema: { name: 'out', schema } } });
const responseWithSchema = (schema: unknown) =>
  post('responses', {
    model: MODEL_ID,
    input: 'hi',
    max_output_tokens: 4,
    text: { format: { type: 'json_schema', name: 'out', schema } },
  });

function expect400(r: { status: number; body: ErrorBody }, param: string | null, code: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.error).toEqual({ message: expect.any(String), type: 'invalid_request_error', param, code });
}

/** Alive, a plain chat completes, and /health shows nothing running or waiting. */
async function expectServingAndIdle(): Promise<void> {
  expect(hearth.proc.exitCode).toBeNull();
  const r = await chat({});
  expect(r.status).toBe(200);
  expect(r.body.object).toBe('chat.completion');
  const health = (await (
    await fetch(`${hearth.baseUrl}/health`, { signal: AbortSignal.timeout(HANG_BOUND_MS) })
  ).json()) as { requests: { running: number; waiting: number } };
  expect(health.requests).toEqual({ running: 0, waiting: 0 });
}

describe('defect: a role or format named like an Object.prototype member', () => {
  // ROLE_MAP['constructor'] was the Object function: validation passed, the worker could not clone it (500).
  const PROTO_NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

  // Bodies written out by hand: JSON.stringify of a {__proto__: ...} literal would not send the key.
  it.each([
    [
      'a chat message role',
      'messages[0].role',
      'chat/completions' as const,
      (role: string) => `{"model":"${MODEL_ID}","max_tokens":4,"messages":[{"role":"${role}","content":"x"}]}`,
    ],
    [
      'a Responses API input role',
      'input[0].role',
      'responses' as const,
      (role: string) => `{"model":"${MODEL_ID}","max_output_tokens":4,"input":[{"role":"${role}","content":"x"}]}`,
    ],
  ])('%s is a 400 naming %s', async (_what, param, route, bodyWithRole) => {
    for (const role of PROTO_NAMES) expect400(await post(route, bodyWithRole(role)), param, 'invalid_value');
    await expectServingAndIdle();
  });

  it("a string format is a 400 unsupported_schema_keyword naming the caller's field, not a 500", async () => {
    for (const format of PROTO_NAMES) {
      expect400(
        await withSchema({ type: 'string', format }),
        'response_format.json_schema.schema',
        'unsupported_schema_keyword',
      );
      expect400(
        await responseWithSchema({ type: 'string', format }),
        'text.format.schema',
        'unsupported_schema_keyword',
      );
    }
    await expectServingAndIdle();
  });

  it('a $ref to an inherited member points to nothing: 400', async () => {
    for (const name of PROTO_NAMES) {
      const r = await post(
        'chat/completions',
        `{"model":"${MODEL_ID}","max_tokens":4,"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{"$defs":{},"$ref":"#/$defs/${name}"}}}}`,
      );
      expect(r.status, `${name}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error.param).toBe('response_format.json_schema.schema');
    }
    await expectServingAndIdle();
  });
});

describe('defect: a schema whose conversion work doubles per level', () => {
  // `type: ["object","object"]` visits the same subschema twice under the same rule names, so the rules
  // dedupe (the rule and size limits never trip) while the work doubles per level: 26 levels (what fits in
  // the 64 levels of JSON a body may nest) blocked the main thread for hours.
  function doubling(levels: number): Record<string, unknown> {
    let s: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < levels; i++) s = { type: ['object', 'object'], properties: { a: s }, required: ['a'] };
    return s;
  }

  it('is refused as too complex (400 invalid_schema) on response_format, a forced tool and the Responses API', async () => {
    expect400(await withSchema(doubling(26)), 'response_format.json_schema.schema', 'invalid_schema');
    const tool = { type: 'function', function: { name: 'f', parameters: doubling(26) } };
    expect400(await chat({ tools: [tool], tool_choice: 'required' }), 'tools', 'invalid_schema');
    expect400(await responseWithSchema(doubling(26)), 'text.format.schema', 'invalid_schema');
    await expectServingAndIdle();
  });

  it('a few levels of it still convert and answer', async () => {
    const r = await withSchema(doubling(3));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await expectServingAndIdle();
  });
});

describe('defect: repetition bounds llama.cpp cannot enforce', () => {
  // maxLength 2500 was a 200 whose grammar llama.cpp read as "any length"; maxItems 1500 a grammar it refused.
  it('minItems / maxItems / minLength / maxLength above 1000 are a 400 naming the keyword', async () => {
    for (const [keyword, schema] of [
      ['maxLength', { type: 'string', maxLength: 2500 }],
      ['minLength', { type: 'string', minLength: 1e9 }],
      ['maxItems', { type: 'array', maxItems: 1500 }],
      ['minItems', { type: 'array', minItems: 2 ** 53 }],
    ] as const) {
      const r = await withSchema({ type: 'object', properties: { a: schema }, required: ['a'] });
      expect400(r, 'response_format.json_schema.schema', 'unsupported_schema_keyword');
      expect(r.body.error.message).toContain(`'${keyword}'`);
    }
    expect(
      (await withSchema({ type: 'array', items: { type: 'string', maxLength: 1000 }, maxItems: 1000 })).status,
    ).toBe(200);
    await expectServingAndIdle();
  });

  it('bounds that add up to more than 32,768 repetitions are a 400 invalid_schema', async () => {
    // llama.cpp parses x{0,n} into n rules, on the engine's slot loop thread (every slot waits), and keeps the
    // grammar parsed: these 1,000 strings of maxLength 1,000 (a million rules) took 1.4 s and about 140 MB each.
    const wide = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 1000 }, (_, i) => [`p${i}`, { type: 'string', maxLength: 1000 }]),
      ),
    };
    expect400(await withSchema(wide), 'response_format.json_schema.schema', 'invalid_schema');
    const tool = { type: 'function', function: { name: 'f', parameters: wide } };
    expect400(
      await chat({ tools: [tool], tool_choice: { type: 'function', function: { name: 'f' } } }),
      'tools',
      'invalid_schema',
    );
    await expectServingAndIdle();
  });
});

describe('defect: a schema whose grammar is exponentially ambiguous', () => {
  // d_i: anyOf [$ref d_{i+1}, $ref d_{i+1}]: linear in rules and text, but llama.cpp's grammar walks every
  // path into a rule when it sets up its stacks (2^levels of them, deduplicated only at the end), on the
  // engine's slot loop thread: 18 levels took 66 ms, so 30 would hold every slot for minutes.
  function ambiguous(levels: number): Record<string, unknown> {
    const defs: Record<string, unknown> = { [`d${levels}`]: { type: 'string', maxLength: 4 } };
    for (let i = 0; i < levels; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    return { $defs: defs, $ref: '#/$defs/d0' };
  }

  it('is a 400 invalid_schema before it reaches the engine', async () => {
    expect400(await withSchema(ambiguous(30)), 'response_format.json_schema.schema', 'invalid_schema');
    const tool = {
      type: 'function',
      function: {
        name: 'f',
        parameters: {
          ...ambiguous(30),
          $ref: undefined,
          type: 'object',
          properties: { a: { $ref: '#/$defs/d0' } },
          required: ['a'],
        },
      },
    };
    expect400(await chat({ tools: [tool], tool_choice: 'required' }), 'tools', 'invalid_schema');
    await expectServingAndIdle();
  });

  it('a few levels of it still answer', async () => {
    expect((await withSchema(ambiguous(3))).status).toBe(200);
    await expectServingAndIdle();
  });
});
