import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HearthProcess } from '../helpers/hearth-process.ts';
import { serveModel } from '../helpers/served-model.ts';

/**
 * Property-based fuzzing of the shared endpoint's request bodies (chat completions, JSON and SSE, the
 * Responses API, legacy completions, embeddings, the Messages API and count_tokens) on a real `hearth serve` with the tiny chat model: every field with values of every wrong type
 * and extreme size, messages and content parts of odd shapes, strings with NUL and lone surrogates, keys named
 * like Object.prototype members, unknown and duplicate keys, and generated JSON Schemas (deep, recursive `$ref`,
 * huge bounds and enums, unsupported keywords) for response_format, text.format and forced tools.
 * Invariants for each case: an answer comes (every request is bounded by an abort signal); it is never a 5xx;
 * an error is `{"error":{message,type,param,code}}` (on the Messages routes `{"type":"error","error":{type,message}}`) with a 4xx; a 200 is a complete chat completion, Response,
 * or stream (ending in `[DONE]` / `response.completed`). After the run the process is alive, a plain request
 * completes, and /health, /api/inference/v1/models and /metrics show nothing running or waiting.
 * Fixed seeds, bounded runs: the same cases every time.
 */
let hearth: HearthProcess;
const MODEL_ID = 'local/tiny-chat';
const SEED = 0x5eed_b0d7;
const HANG_BOUND_MS = 20_000;

beforeAll(async () => {
  hearth = (await serveModel(MODEL_ID, ['--slots', '4', '--max-tokens', '64'])).hearth;
}, 60_000);
afterAll(() => hearth?.stop());

// ---- values ----

const PROTO_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype'];
const hostileString = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', '\udfff', 'x\ud800y', '\ufeff', '\u2028', '💡', ...PROTO_KEYS),
  fc.integer({ min: 1000, max: 40_000 }).map((n) => 'w'.repeat(n)),
);
const hostileNumber = fc.oneof(
  fc.constantFrom(
    1e308,
    -1e308,
    -0,
    0,
    1,
    -1,
    0.5,
    2 ** 53,
    2 ** 53 + 2,
    2 ** 64,
    -(2 ** 63),
    4294967296,
    1e-320,
    20,
    21,
    100_001,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);
const wrongType = fc.oneof(
  hostileNumber,
  hostileString,
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e3', '0x10', '1', 'true'),
  fc.constantFrom(true, false, null, [], {}, [1], { a: 1 }),
);
const anyValue = fc.oneof({ weight: 3, arbitrary: wrongType }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) });

// ---- JSON Schemas ----

const refPath = fc.oneof(
  fc.constantFrom(
    '#',
    '#/$defs/a',
    '#/$defs/b',
    '#/definitions/a',
    '#/properties/x',
    '#/$defs/__proto__',
    '#/$defs/constructor',
    '#/items/0',
    '#/anyOf/',
    '#/$defs/a/anyOf/0',
    'http://x/s.json',
    '#a',
    '#/$defs/~0~1',
  ),
  hostileString,
);
const schemaArb: fc.Arbitrary<unknown> = fc.letrec<{ schema: unknown }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    {
      weight: 3,
      arbitrary: fc.record({
        type: fc.constantFrom('string', 'number', 'integer', 'boolean', 'null', 'object', 'array'),
      }),
    },
    fc.boolean(),
    fc.record(
      {
        type: fc.oneof(
          fc.constantFrom('object', 'array', 'string', 'integer', 'nope', ''),
          fc.array(fc.constantFrom('object', 'object', 'string', 'null', 'array'), { maxLength: 4 }),
          wrongType,
        ),
        properties: fc.dictionary(
          fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(...PROTO_KEYS)),
          tie('schema'),
          { maxKeys: 4 },
        ),
        required: fc.oneof(
          fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(...PROTO_KEYS)), { maxLength: 4 }),
          wrongType,
        ),
        additionalProperties: fc.oneof(fc.boolean(), tie('schema'), wrongType),
        items: fc.oneof(tie('schema'), fc.array(tie('schema'), { maxLength: 3 })),
        prefixItems: fc.array(tie('schema'), { maxLength: 3 }),
        minItems: hostileNumber,
        maxItems: hostileNumber,
        minLength: hostileNumber,
        maxLength: hostileNumber,
        minimum: hostileNumber,
        maximum: hostileNumber,
        exclusiveMinimum: hostileNumber,
        enum: fc.oneof(
          fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
          fc.integer({ min: 9000, max: 12_000 }).map((n) => Array.from({ length: n }, (_, i) => `v${i}`)),
          wrongType,
        ),
        const: fc.jsonValue({ maxDepth: 2 }),
        anyOf: fc.oneof(fc.array(tie('schema'), { maxLength: 3 }), wrongType),
        oneOf: fc.array(tie('schema'), { maxLength: 3 }),
        allOf: fc.array(tie('schema'), { maxLength: 2 }),
        $ref: refPath,
        $defs: fc.dictionary(fc.constantFrom('a', 'b', '__proto__', 'constructor'), tie('schema'), { maxKeys: 3 }),
        format: fc.oneof(fc.constantFrom('date', 'time', 'date-time', 'uuid', 'email', ...PROTO_KEYS), wrongType),
        pattern: fc.constantFrom('^a+$', '(a+)+$'),
        uniqueItems: fc.boolean(),
        description: hostileString,
      },
      { requiredKeys: [] },
    ),
  ),
})).schema;

/** A record whose `type` is always there and whose other fields each may be missing (a part, a block, an item). */
function typedRecord<T extends { type: fc.Arbitrary<unknown> } & Record<string, fc.Arbitrary<unknown>>>(fields: T) {
  return fc.record(fields, { requiredKeys: ['type'] });
}
/** A part of one of `types` or a type named like an Object.prototype member, with a `text` beside it. */
const otherPart = (...types: string[]) =>
  typedRecord({ type: fc.constantFrom(...types, ...PROTO_KEYS), text: hostileString });

// ---- chat completions bodies ----

const contentPart = fc.oneof(
  fc.record({ type: fc.constant('text'), text: hostileString }),
  otherPart('image_url', 'input_audio', 'file', 'refusal', 'input_text'),
  anyValue,
);
const toolCallArb = fc.record(
  {
    id: fc.oneof(hostileString, wrongType),
    type: fc.oneof(fc.constant('function'), wrongType),
    function: fc.oneof(
      fc.record({
        name: fc.oneof(fc.constantFrom('f', 'get_weather'), hostileString),
        arguments: fc.oneof(fc.constant('{}'), hostileString, wrongType),
      }),
      wrongType,
    ),
  },
  { requiredKeys: [] },
);
const messageArb = fc.oneof(
  { weight: 4, arbitrary: fc.record({ role: fc.constantFrom('user', 'system', 'developer'), content: hostileString }) },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        role: fc.oneof(
          fc.constantFrom('user', 'system', 'developer', 'assistant', 'tool', 'function', 'User', ''),
          fc.constantFrom(...PROTO_KEYS),
          wrongType,
        ),
        content: fc.oneof(hostileString, fc.array(contentPart, { maxLength: 3 }), wrongType),
        name: anyValue,
        tool_calls: fc.oneof(fc.array(toolCallArb, { maxLength: 2 }), wrongType),
        tool_call_id: fc.oneof(hostileString, wrongType),
        function_call: anyValue,
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: anyValue },
);
const toolArb = fc.oneof(
  fc.record({
    type: fc.constant('function'),
    function: fc.record(
      {
        name: fc.oneof(fc.constantFrom('f', 'g'), hostileString),
        description: fc.oneof(hostileString, wrongType),
        parameters: schemaArb,
        strict: fc.oneof(fc.boolean(), wrongType),
      },
      { requiredKeys: ['name'] },
    ),
  }),
  fc.record(
    { type: fc.oneof(fc.constantFrom('code_interpreter', 'web_search'), wrongType), function: anyValue },
    { requiredKeys: [] },
  ),
  anyValue,
);
const toolChoiceArb = fc.oneof(
  fc.constantFrom('none', 'auto', 'required', 'any', ''),
  fc.record({
    type: fc.constant('function'),
    function: fc.record({ name: fc.constantFrom('f', 'g', 'missing', '__proto__') }),
  }),
  wrongType,
);
const responseFormatArb = fc.oneof(
  fc.record({
    type: fc.constant('json_schema'),
    json_schema: fc.record(
      {
        name: fc.oneof(fc.constant('out'), hostileString),
        schema: schemaArb,
        strict: fc.oneof(fc.boolean(), wrongType),
      },
      { requiredKeys: ['name'] },
    ),
  }),
  fc.record({ type: fc.oneof(fc.constantFrom('text', 'json_object', 'json_schema', 'xml'), wrongType) }),
  wrongType,
);

/** The sampling fields Chat Completions and legacy Completions share, each fed any value. */
const samplingFields = {
  temperature: anyValue,
  top_p: anyValue,
  max_tokens: anyValue,
  seed: anyValue,
  presence_penalty: anyValue,
  frequency_penalty: anyValue,
  top_k: anyValue,
  min_p: anyValue,
  repetition_penalty: anyValue,
};
const chatFields = {
  model: fc.oneof(
    { weight: 8, arbitrary: fc.constant(MODEL_ID) },
    { weight: 1, arbitrary: fc.oneof(hostileString, wrongType) },
  ),
  messages: fc.oneof(
    { weight: 6, arbitrary: fc.array(messageArb, { minLength: 1, maxLength: 4 }) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constant([]),
        wrongType,
        fc
          .integer({ min: 2040, max: 2100 })
          .map((n) => Array.from({ length: n }, () => ({ role: 'user', content: 'x' }))),
      ),
    },
  ),
  stream: fc.oneof(fc.boolean(), wrongType),
  stream_options: fc.oneof(fc.record({ include_usage: fc.oneof(fc.boolean(), wrongType) }), wrongType),
  ...samplingFields,
  max_completion_tokens: anyValue,
  reasoning_effort: fc.oneof(fc.constantFrom('none', 'minimal', 'low', 'medium', 'high'), anyValue),
  n: fc.oneof(fc.constantFrom(1, 2, 0, 1.0), wrongType),
  logprobs: fc.oneof(fc.boolean(), wrongType),
  top_logprobs: fc.oneof(fc.integer({ min: -1, max: 21 }), wrongType),
  stop: fc.oneof(hostileString, fc.array(hostileString, { maxLength: 6 }), wrongType),
  tools: fc.oneof(fc.array(toolArb, { maxLength: 3 }), wrongType),
  tool_choice: toolChoiceArb,
  parallel_tool_calls: fc.oneof(fc.boolean(), wrongType),
  response_format: responseFormatArb,
  user: anyValue,
  metadata: anyValue,
  logit_bias: anyValue,
  functions: anyValue,
  // Lowering only: 'batch' is taken, anything else (also 'interactive') is a 400 naming priority.
  priority: fc.oneof(fc.constantFrom('batch', 'interactive', 'BATCH', ''), anyValue),
};
/**
 * A valid request with 1 to 3 of its fields replaced by generated ones (most cases), or generated fields only:
 * so that cases get past the first refusal and reach the deeper checks, the grammar and the engine.
 */
function mutated<T extends Record<string, fc.Arbitrary<unknown>>>(
  base: Record<string, unknown>,
  fields: T,
): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(fields);
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .subarray(names, { minLength: 1, maxLength: 3 })
        .chain((picked) =>
          fc.record(Object.fromEntries(picked.map((k) => [k, fields[k]!]))).map((over) => ({ ...base, ...over })),
        ),
    },
    { weight: 1, arbitrary: fc.record(fields, { requiredKeys: [] }) },
  );
}
const chatBody = mutated({ model: MODEL_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }, chatFields);

// ---- Responses API bodies ----

const responsesInputItem = fc.oneof(
  fc.record(
    {
      role: fc.oneof(
        fc.constantFrom('user', 'assistant', 'system', 'developer', 'tool'),
        fc.constantFrom(...PROTO_KEYS),
        wrongType,
      ),
      content: fc.oneof(
        hostileString,
        fc.array(
          fc.oneof(
            fc.record({ type: fc.constantFrom('input_text', 'output_text', 'input_image'), text: hostileString }),
            anyValue,
          ),
          { maxLength: 3 },
        ),
        wrongType,
      ),
    },
    { requiredKeys: [] },
  ),
  typedRecord({
    type: fc.oneof(
      fc.constantFrom('message', 'function_call', 'function_call_output', 'reasoning', ...PROTO_KEYS),
      wrongType,
    ),
    call_id: fc.oneof(hostileString, wrongType),
    name: fc.oneof(fc.constant('f'), hostileString),
    arguments: fc.oneof(fc.constant('{}'), wrongType),
    output: fc.oneof(hostileString, wrongType),
    role: fc.constant('user'),
    content: hostileString,
  }),
  anyValue,
);
const responsesBody = mutated(
  { model: MODEL_ID, input: 'hi', max_output_tokens: 4 },
  {
    model: chatFields.model,
    input: fc.oneof(hostileString, fc.array(responsesInputItem, { maxLength: 4 }), wrongType),
    instructions: fc.oneof(hostileString, wrongType),
    max_output_tokens: anyValue,
    temperature: anyValue,
    top_p: anyValue,
    top_logprobs: anyValue,
    stream: fc.oneof(fc.boolean(), wrongType),
    tools: fc.oneof(
      fc.array(
        fc.oneof(
          fc.record(
            {
              type: fc.constant('function'),
              name: fc.oneof(fc.constantFrom('f', 'g'), hostileString),
              parameters: schemaArb,
              strict: fc.oneof(fc.boolean(), wrongType),
            },
            { requiredKeys: ['type', 'name'] },
          ),
          anyValue,
        ),
        { maxLength: 3 },
      ),
      wrongType,
    ),
    tool_choice: fc.oneof(
      fc.constantFrom('none', 'auto', 'required'),
      fc.record({ type: fc.constant('function'), name: fc.constantFrom('f', 'missing') }),
      wrongType,
    ),
    text: fc.oneof(
      fc.record({
        format: fc.oneof(
          fc.record({
            type: fc.constant('json_schema'),
            name: fc.constant('out'),
            schema: schemaArb,
            strict: fc.oneof(fc.boolean(), wrongType),
          }),
          fc.record({ type: fc.oneof(fc.constantFrom('text', 'json_object'), wrongType) }),
        ),
      }),
      wrongType,
    ),
    include: fc.oneof(
      fc.constant(['message.output_text.logprobs']),
      fc.array(hostileString, { maxLength: 2 }),
      wrongType,
    ),
    store: fc.oneof(fc.boolean(), wrongType),
    previous_response_id: anyValue,
    reasoning: anyValue,
    metadata: anyValue,
    parallel_tool_calls: anyValue,
    user: anyValue,
    priority: chatFields.priority,
  },
);

// ---- legacy completions bodies ----

const tokenId = fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.constantFrom(-1, 0xffffffff, 4294967296, 1.5));
/** A `prompt` or `input`: text, texts, token ids (some out of range), lists of them, `tooMany` entries, a wrong type. */
const textOrTokens = (tooMany: fc.Arbitrary<unknown[]>) =>
  fc.oneof(
    hostileString,
    fc.array(hostileString, { maxLength: 4 }),
    fc.array(fc.oneof(tokenId, wrongType), { maxLength: 6 }),
    fc.array(fc.array(tokenId, { maxLength: 4 }), { maxLength: 3 }),
    tooMany,
    wrongType,
  );
const completionsBody = mutated(
  { model: MODEL_ID, prompt: 'hi', max_tokens: 4 },
  {
    model: chatFields.model,
    prompt: textOrTokens(fc.integer({ min: 60, max: 70 }).map((n) => Array.from({ length: n }, () => 'x'))),
    echo: fc.oneof(fc.boolean(), wrongType),
    logprobs: fc.oneof(fc.integer({ min: -1, max: 21 }), wrongType),
    suffix: anyValue,
    best_of: fc.oneof(fc.constantFrom(1, 2), wrongType),
    n: chatFields.n,
    stream: chatFields.stream,
    stream_options: chatFields.stream_options,
    stop: chatFields.stop,
    ...samplingFields,
    user: anyValue,
    logit_bias: anyValue,
    messages: anyValue,
  },
);

// ---- embeddings bodies ----

const embeddingsBody = mutated(
  { model: MODEL_ID, input: 'hi' },
  {
    model: chatFields.model,
    input: textOrTokens(fc.integer({ min: 2040, max: 2056 }).map((n) => Array.from({ length: n }, (_, i) => `x${i}`))),
    encoding_format: fc.oneof(fc.constantFrom('float', 'base64', 'int8', ''), wrongType),
    dimensions: fc.oneof(fc.integer({ min: -1, max: 4096 }), wrongType),
    user: anyValue,
  },
);

// ---- Anthropic Messages API bodies ----

const anthropicText = fc.record({ type: fc.constant('text'), text: hostileString });
const anthropicBlock = fc.oneof(
  anthropicText,
  typedRecord({
    type: fc.constant('tool_use'),
    id: fc.oneof(hostileString, wrongType),
    name: fc.oneof(fc.constantFrom('f', 'get_weather'), hostileString),
    input: fc.oneof(fc.jsonValue({ maxDepth: 2 }), wrongType),
  }),
  typedRecord({
    type: fc.constant('tool_result'),
    tool_use_id: fc.oneof(hostileString, wrongType),
    content: fc.oneof(hostileString, fc.array(fc.oneof(anthropicText, anyValue), { maxLength: 2 }), wrongType),
    is_error: fc.oneof(fc.boolean(), wrongType),
  }),
  otherPart('image', 'document', 'thinking', 'redacted_thinking', 'server_tool_use'),
  anyValue,
);
const anthropicMessage = fc.oneof(
  { weight: 3, arbitrary: fc.record({ role: fc.constant('user'), content: hostileString }) },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        role: fc.oneof(fc.constantFrom('user', 'assistant', 'system', ''), fc.constantFrom(...PROTO_KEYS), wrongType),
        content: fc.oneof(hostileString, fc.array(anthropicBlock, { maxLength: 3 }), wrongType),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: anyValue },
);
const anthropicTool = fc.oneof(
  fc.record(
    {
      name: fc.oneof(fc.constantFrom('f', 'g'), hostileString),
      description: fc.oneof(hostileString, wrongType),
      input_schema: schemaArb,
      type: fc.oneof(fc.constantFrom('custom', 'web_search_20250305'), wrongType),
    },
    { requiredKeys: ['name'] },
  ),
  anyValue,
);
const anthropicPromptFields = {
  model: chatFields.model,
  messages: fc.oneof(
    { weight: 6, arbitrary: fc.array(anthropicMessage, { minLength: 1, maxLength: 4 }) },
    { weight: 1, arbitrary: fc.oneof(fc.constant([]), wrongType) },
  ),
  system: fc.oneof(hostileString, fc.array(fc.oneof(anthropicText, anyValue), { maxLength: 2 }), wrongType),
  tools: fc.oneof(fc.array(anthropicTool, { maxLength: 3 }), wrongType),
  tool_choice: fc.oneof(
    typedRecord({
      type: fc.constantFrom('auto', 'any', 'tool', 'none', 'x'),
      name: fc.constantFrom('f', 'g', 'missing', '__proto__'),
      disable_parallel_tool_use: fc.oneof(fc.boolean(), wrongType),
    }),
    wrongType,
  ),
  thinking: fc.oneof(fc.record({ type: fc.constantFrom('enabled', 'disabled') }), wrongType),
};
const messagesBody = mutated(
  { model: MODEL_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
  {
    ...anthropicPromptFields,
    max_tokens: anyValue,
    stop_sequences: fc.oneof(fc.array(hostileString, { maxLength: 5 }), wrongType),
    temperature: anyValue,
    top_p: anyValue,
    top_k: anyValue,
    stream: chatFields.stream,
    metadata: anyValue,
    service_tier: anyValue,
    cache_control: anyValue,
  },
);
const countTokensBody = mutated(
  { model: MODEL_ID, messages: [{ role: 'user', content: 'hi' }] },
  { ...anthropicPromptFields, max_tokens: anyValue },
);

/** Serializes with extra raw keys JSON.stringify cannot write: Object.prototype names, duplicates, unknowns. */
const withRawKeys = (body: fc.Arbitrary<Record<string, unknown>>) =>
  fc
    .tuple(
      body,
      fc.oneof(
        { weight: 4, arbitrary: fc.constant([] as Array<[string, unknown]>) },
        {
          weight: 1,
          arbitrary: fc.array(
            fc.tuple(
              fc.oneof(
                fc.constantFrom(...PROTO_KEYS, 'model', 'messages', 'input', 'stream', 'max_tokens'),
                fc.string({ maxLength: 8 }),
              ),
              fc.jsonValue({ maxDepth: 2 }),
            ),
            { minLength: 1, maxLength: 2 },
          ),
        },
      ),
    )
    .map(([b, extra]) => {
      const text = JSON.stringify(b);
      if (extra.length === 0) return text;
      const tail = extra.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',');
      return text === '{}' ? `{${tail}}` : `${text.slice(0, -1)},${tail}}`;
    });

type ErrorShape = { type?: unknown; error?: { message?: unknown; type?: unknown; param?: unknown; code?: unknown } };
type Route = 'chat/completions' | 'responses' | 'completions' | 'embeddings' | 'messages' | 'messages/count_tokens';
/** The Messages API's routes answer errors in Anthropic's shape. */
const anthropicRoute = (route: Route) => route.startsWith('messages');
/** What a 200 JSON answer of each route is. */
const OK_BODY: Record<Route, (json: Record<string, unknown>) => boolean> = {
  'chat/completions': (j) => j.object === 'chat.completion',
  responses: (j) => j.object === 'response',
  completions: (j) => j.object === 'text_completion' && Array.isArray(j.choices),
  embeddings: (j) => j.object === 'list' && Array.isArray(j.data) && j.data.length > 0,
  messages: (j) => j.type === 'message' && Array.isArray(j.content),
  'messages/count_tokens': (j) => typeof j.input_tokens === 'number',
};

/** Sends one body; asserts the invariants of an answer. Returns the status (and error code) for the tally. */
async function sendAndCheck(route: Route, body: string): Promise<string> {
  const what = `${route} ${body.slice(0, 600)}`;
  const r = await fetch(`${hearth.baseUrl}/api/inference/v1/${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(HANG_BOUND_MS),
  });
  const text = await r.text();
  const detail = `${what}\n-> ${r.status} ${text.slice(0, 400)}`;
  expect(r.status, detail).toBeLessThan(500);
  const type = r.headers.get('content-type') ?? '';
  if (r.status !== 200) {
    expect(r.status, detail).toBeGreaterThanOrEqual(400);
    expect(type, detail).toBe('application/json');
    const parsed = JSON.parse(text) as ErrorShape;
    const e = parsed.error;
    if (anthropicRoute(route))
      expect(parsed.type === 'error' && typeof e?.message === 'string' && typeof e.type === 'string', detail).toBe(
        true,
      );
    else
      expect(
        e && typeof e.message === 'string' && typeof e.type === 'string' && 'param' in e && 'code' in e,
        detail,
      ).toBe(true);
    return `${r.status}:${String(e!.code)}`;
  }
  if (type.startsWith('text/event-stream')) {
    // A failure after the stream committed is an error event, never a 5xx status: the stream must still end well.
    expect(text, detail).not.toMatch(/"type":"server_error"/);
    expect(text, detail).not.toMatch(/"type":"api_error"/);
    if (route === 'chat/completions' || route === 'completions')
      expect(text.trimEnd().endsWith('data: [DONE]') || /"error":/.test(text), detail).toBe(true);
    else if (route === 'messages')
      expect(
        text.trimEnd().endsWith('event: message_stop\ndata: {"type":"message_stop"}') || /event: error\n/.test(text),
        detail,
      ).toBe(true);
    else
      expect(/event: response\.(completed|incomplete)\n/.test(text) || /event: error\n/.test(text), detail).toBe(true);
    return '200:stream';
  }
  expect(type, detail).toBe('application/json');
  expect(OK_BODY[route](JSON.parse(text) as Record<string, unknown>), detail).toBe(true);
  return '200';
}

async function get(path: string): Promise<Response> {
  return fetch(`${hearth.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${hearth.key}` },
    signal: AbortSignal.timeout(HANG_BOUND_MS),
  });
}

/** Alive, a plain request completes, and nothing is left holding or waiting for a slot. */
async function expectServingAndIdle(): Promise<void> {
  expect(hearth.proc.exitCode, hearth.logs().slice(-2000)).toBeNull();
  expect(
    await sendAndCheck(
      'chat/completions',
      JSON.stringify({ model: MODEL_ID, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }),
    ),
  ).toBe('200');
  const health = (await (await get('/health')).json()) as {
    state: string;
    requests: { running: number; waiting: number };
  };
  expect(health).toMatchObject({ state: 'ready', requests: { running: 0, waiting: 0 } });
  const models = (await (await get('/api/inference/v1/models')).json()) as {
    data: Array<{ id: string; hearth: { state: string } }>;
  };
  expect(models.data[0]).toMatchObject({ id: MODEL_ID, hearth: { state: 'ready' } });
  const metrics = await (await get('/metrics')).text();
  for (const priority of ['interactive', 'batch']) {
    expect(metrics).toMatch(
      new RegExp(`^hearth_num_requests_running\\{model="local/tiny-chat",priority="${priority}"\\} 0$`, 'm'),
    );
    expect(metrics).toMatch(
      new RegExp(`^hearth_num_requests_waiting\\{model="local/tiny-chat",priority="${priority}"\\} 0$`, 'm'),
    );
  }
}

describe('shared endpoint request bodies (fast-check, fixed seed)', () => {
  const tally = new Map<string, number>();
  const count = (k: string) => tally.set(k, (tally.get(k) ?? 0) + 1);
  /** `numRuns` bodies drawn from `bodies` (fixed seed) sent to `route`, each checked by sendAndCheck and tallied under `label`. */
  const fuzzRoute = (label: string, route: Route, bodies: fc.Arbitrary<string>, numRuns: number) =>
    fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        count(`${label}:${await sendAndCheck(route, body)}`);
      }),
      { seed: SEED, numRuns, endOnFailure: true },
    );
  afterAll(() => console.log(`[fuzz] inference bodies: ${JSON.stringify(Object.fromEntries([...tally].sort()))}`));

  it.each<[string, string, Route, fc.Arbitrary<Record<string, unknown>>, number]>([
    ['chat completions', 'chat', 'chat/completions', chatBody, 600],
    ['legacy completions', 'completions', 'completions', completionsBody, 300],
    ['embeddings', 'embeddings', 'embeddings', embeddingsBody, 300],
    ['Responses API', 'responses', 'responses', responsesBody, 400],
  ])(
    '%s: an answer in the documented shape, never a 5xx or a hang',
    async (_api, label, route, bodies, numRuns) => {
      await fuzzRoute(label, route, withRawKeys(bodies), numRuns);
      await expectServingAndIdle();
    },
    120_000,
  );

  it('chat completions with a schema (response_format or a forced tool) in an otherwise valid request', async () => {
    const body = fc.tuple(fc.boolean(), schemaArb, fc.boolean(), fc.boolean()).map(([forced, schema, strict, stream]) =>
      JSON.stringify({
        model: MODEL_ID,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
        stream,
        ...(forced
          ? {
              tools: [{ type: 'function', function: { name: 'f', parameters: schema, strict } }],
              tool_choice: 'required',
            }
          : { response_format: { type: 'json_schema', json_schema: { name: 'out', schema, strict } } }),
      }),
    );
    await fuzzRoute('schema', 'chat/completions', body, 400);
    await expectServingAndIdle();
  }, 120_000);

  it("Messages API and count_tokens: an answer in Anthropic's shape, never a 5xx or a hang", async () => {
    await fuzzRoute('messages', 'messages', withRawKeys(messagesBody), 300);
    await fuzzRoute('count_tokens', 'messages/count_tokens', withRawKeys(countTokensBody), 150);
    await expectServingAndIdle();
  }, 120_000);
});
