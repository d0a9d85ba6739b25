import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors/api-error.ts';
import { ChatAnswer } from '../../src/protocol/chat-answer.ts';
import type { ChatDelta } from '../../src/protocol/chat-delta.ts';
import {
  type ChatMessage,
  type ChatRequest,
  type FunctionTool,
  plainChatFields,
} from '../../src/protocol/chat-request.ts';
import { CompletionBuilder } from '../../src/protocol/completion-builder.ts';
import type { ChatCompletion, ChatCompletionChunk } from '../../src/protocol/openai-types.ts';
import {
  createProvider,
  isAbortError,
  type ChatProvider,
  type ProviderCall,
  type ProviderName,
  type ProviderOptions,
} from '../../src/providers/index.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/index.ts';

/**
 * One contract for the four upstream providers, each run against its local fake speaking the vendor's
 * real wire format. Time-outs are short so failure paths finish fast; nothing asserts an upper bound on
 * time, only "waited at least" where a wait is the behaviour under test.
 */

const API_KEY = 'sk-test-SECRET-0123456789abcdef';
/** Limit for the abort tests: their upstream time-outs are far longer, so only a prompt abort passes. */
const ABORT_TEST_LIMIT_MS = 5000;

interface ProviderCase {
  name: ProviderName;
  model: string;
  /** The vendor's own "ran out of tokens" finish reason. */
  lengthReason: string;
  /** A 5xx the vendor typically answers when overloaded. */
  overloadedStatus: number;
  supportsSeed: boolean;
}

const CASES: ProviderCase[] = [
  { name: 'openai', model: 'gpt-4o-mini', lengthReason: 'length', overloadedStatus: 500, supportsSeed: true },
  {
    name: 'anthropic',
    model: 'claude-3-5-haiku-latest',
    lengthReason: 'max_tokens',
    overloadedStatus: 529,
    supportsSeed: false,
  },
  { name: 'gemini', model: 'gemini-2.0-flash', lengthReason: 'MAX_TOKENS', overloadedStatus: 503, supportsSeed: true },
  {
    name: 'mistral',
    model: 'mistral-small-latest',
    lengthReason: 'model_length',
    overloadedStatus: 503,
    supportsSeed: true,
  },
];

function chatRequest(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    model: 'the-request-model-is-ignored',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hello' },
    ],
    stream: false,
    includeUsage: false,
    stop: [],
    ...plainChatFields(),
    ...overrides,
  };
}

async function collect(iterable: AsyncIterable<ChatDelta>): Promise<ChatDelta[]> {
  const out: ChatDelta[] = [];
  for await (const delta of iterable) out.push(delta);
  return out;
}

/** What the chat responder sends for these deltas as SSE: the role chunk, then each delta's chunks. */
function chunksOf(deltas: ChatDelta[], model: string, includeUsage: boolean): ChatCompletionChunk[] {
  const builder = new CompletionBuilder(model);
  const text = [
    `data: ${JSON.stringify(builder.roleChunk())}\n\n`,
    ...deltas.map((d) => builder.deltaEvent(d, includeUsage)),
  ].join('');
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: {'))
    .map((e) => JSON.parse(e.slice(6)) as ChatCompletionChunk);
}

/** What the chat responder sends for these deltas as JSON. */
function completionOf(deltas: ChatDelta[], model: string): ChatCompletion {
  const answer = new ChatAnswer();
  for (const d of deltas) answer.push(d);
  return answer.completion(new CompletionBuilder(model));
}

const textOf = (deltas: ChatDelta[]) => deltas.map((d) => (d.type === 'content' ? d.text : '')).join('');
const finishOf = (deltas: ChatDelta[]) => deltas.filter((d) => d.type === 'finish');

/** complete(): a JSON (non-streaming) upstream call, rendered as the responder would. */
async function complete(p: ChatProvider, c: ProviderCall): Promise<ChatCompletion> {
  return completionOf(await collect(p.chat({ ...c, request: { ...c.request, stream: false } })), c.model);
}
/** stream(): a streaming upstream call's deltas. */
const stream = (p: ChatProvider, c: ProviderCall): AsyncIterable<ChatDelta> =>
  p.chat({ ...c, request: { ...c.request, stream: true } });

describe.each(CASES)('provider $name (against its local fake)', (c) => {
  let fake: FakeUpstream;
  /** Every error this suite saw, checked for the API key at the end. */
  const seenErrors: unknown[] = [];

  beforeAll(async () => {
    fake = await startFakeUpstream(c.name, { apiKey: API_KEY });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.reset({ apiKey: API_KEY });
  });

  const provider = (options: Partial<ProviderOptions> = {}) =>
    createProvider(c.name, {
      baseUrl: fake.baseUrl,
      timeoutMs: 2000,
      idleTimeoutMs: 2000,
      retryBaseDelayMs: 5,
      maxRetryDelayMs: 3000,
      ...options,
    });

  const call = (request: Partial<ChatRequest> = {}, overrides: Partial<ProviderCall> = {}): ProviderCall => ({
    request: chatRequest(request),
    model: c.model,
    apiKey: API_KEY,
    signal: new AbortController().signal,
    ...overrides,
  });

  /** Awaits a failure and returns it, recording it for the key-leak check. */
  async function failure(promise: Promise<unknown>): Promise<unknown> {
    try {
      await promise;
    } catch (err) {
      seenErrors.push(err);
      return err;
    }
    throw new Error('expected a failure, got a result');
  }
  async function apiFailure(promise: Promise<unknown>): Promise<ApiError> {
    const err = await failure(promise);
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }

  it('answers JSON in the OpenAI shape: text, finish_reason, usage', async () => {
    fake.setReply({ text: 'Hi there, friend.', usage: { prompt: 11, completion: 4 } });
    const result = await complete(provider(), call());
    expect(result.object).toBe('chat.completion');
    expect(result.id).toMatch(/^chatcmpl-/);
    expect(result.model).toBe(c.model);
    expect(result.choices).toHaveLength(1);
    expect(result.choices[0]?.message).toEqual({ role: 'assistant', content: 'Hi there, friend.', refusal: null });
    expect(result.choices[0]?.finish_reason).toBe('stop');
    expect(result.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 });
    expect(fake.requests).toHaveLength(1);
    expect(fake.lastRequest().stream).toBe(false);
  });

  it(`maps the vendor's length reason (${c.lengthReason}) to finish_reason length, JSON and stream`, async () => {
    fake.setReply({ text: 'cut short', finishReason: c.lengthReason });
    const json = await complete(provider(), call());
    expect(json.choices[0]?.finish_reason).toBe('length');
    const deltas = await collect(stream(provider(), call({ stream: true })));
    expect(finishOf(deltas).map((d) => d.reason)).toEqual(['length']);
    expect(deltas.at(-1)?.type).toBe('finish');
  });

  it('streams chunks that reassemble the text: role first, one finish chunk, then the include_usage chunk', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    fake.setReply({ text, usage: { prompt: 9, completion: 10 } });
    const deltas = await collect(stream(provider(), call({ stream: true, includeUsage: true })));
    expect(fake.lastRequest().stream).toBe(true);
    expect(deltas.filter((d) => d.type === 'content').length).toBeGreaterThan(1);
    expect(finishOf(deltas)).toEqual([
      { type: 'finish', reason: 'stop', usage: expect.objectContaining({ promptTokens: 9, completionTokens: 10 }) },
    ]);
    const chunks = chunksOf(deltas, c.model, true);

    const first = chunks[0];
    expect(first?.choices[0]?.delta.role).toBe('assistant');
    expect(new Set(chunks.map((ch) => ch.id)).size).toBe(1);
    expect(new Set(chunks.map((ch) => ch.created)).size).toBe(1);
    expect(chunks.every((ch) => ch.model === c.model && ch.object === 'chat.completion.chunk')).toBe(true);
    expect(first?.id).toMatch(/^chatcmpl-/);
    expect(chunks.map((ch) => ch.choices[0]?.delta.content ?? '').join('')).toBe(text);

    const finishIndex = chunks.findIndex((ch) => ch.choices[0]?.finish_reason != null);
    expect(chunks[finishIndex]?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.slice(finishIndex + 1).every((ch) => ch.choices.length === 0)).toBe(true);
    const last = chunks[chunks.length - 1];
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 10, total_tokens: 19 });
  });

  it('sends no usage chunk when include_usage was not asked for', async () => {
    const chunks = chunksOf(
      await collect(stream(provider(), call({ stream: true, includeUsage: false }))),
      c.model,
      false,
    );
    expect(chunks.every((ch) => ch.choices.length === 1 && ch.usage === undefined)).toBe(true);
    expect(chunks[chunks.length - 1]?.choices[0]?.finish_reason).toBe('stop');
  });

  it('translates the request: system prompt, turns, project temperature default, stop, max tokens, model', async () => {
    const messages: ChatRequest['messages'] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Count to three' },
    ];
    await complete(
      provider(),
      call({ messages, stop: ['END'], maxTokens: 64, topP: 0.5 }, { defaultTemperature: 0.3 }),
    );
    const seen = fake.lastRequest();
    expect(seen.model).toBe(c.model);
    expect(seen.system).toBe('You are terse.');
    expect(seen.messages).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Count to three' },
    ]);
    expect(seen.temperature).toBe(0.3);
    expect(seen.topP).toBe(0.5);
    expect(seen.stop).toEqual(['END']);
    expect(seen.maxTokens).toBe(64);

    await complete(provider(), call({ temperature: 0.9 }, { defaultTemperature: 0.3 }));
    expect(fake.lastRequest().temperature).toBe(0.9);
    await complete(provider(), call());
    expect(fake.lastRequest().temperature).toBeUndefined();
    // OpenAI's range is 0..2; Anthropic's is 0..1 and Hearth clamps (the Anthropic fake rejects > 1).
    await complete(provider(), call({ temperature: 1.5 }));
    expect(fake.lastRequest().temperature).toBe(c.name === 'anthropic' ? 1 : 1.5);
  });

  it(c.supportsSeed ? 'passes the seed on' : 'rejects a seed it cannot honour with a 400 naming it', async () => {
    if (c.supportsSeed) {
      await complete(provider(), call({ seed: 42 }));
      expect(fake.lastRequest().seed).toBe(42);
    } else {
      const err = await apiFailure(complete(provider(), call({ seed: 42 })));
      expect(err.status).toBe(400);
      expect(err.param).toBe('seed');
      expect(fake.requests).toHaveLength(0);
    }
  });

  it("a wrong provider key (the vendor's own rejection) -> 502 naming the provider, key not echoed", async () => {
    const wrongKey = 'sk-wrong-SECRET-99999999999';
    const err = await apiFailure(complete(provider(), call({}, { apiKey: wrongKey })));
    expect(err.status).toBe(502);
    expect(err.type).toBe('upstream_error');
    expect(err.message).toContain(c.name);
    expect(err.message).not.toContain(wrongKey);
    expect(JSON.stringify(err.toBody())).not.toContain('99999999999');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.outcome).toBe('unauthorized');
  });

  it.each([401, 403])('upstream %i -> 502 naming the provider, not retried', async (status) => {
    fake.script({ kind: 'fail', status });
    const err = await apiFailure(complete(provider(), call()));
    expect(err.status).toBe(502);
    expect(err.code).toBe(String(status));
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
  });

  it('upstream 400 -> 400 invalid_request_error carrying the provider message', async () => {
    fake.script({ kind: 'fail', status: 400, message: 'prompt is malformed in some vendor way' });
    const err = await apiFailure(complete(provider(), call()));
    expect(err.status).toBe(400);
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toContain('prompt is malformed in some vendor way');
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
  });

  it('429 with a retry hint is retried after at least the hinted wait, then succeeds', async () => {
    fake.script({ kind: 'fail', status: 429, retryAfter: '1' });
    const result = await complete(provider({ maxRetries: 2 }), call());
    expect(result.choices[0]?.message.content).toBe('Hello from the fake upstream.');
    expect(fake.requests.map((r) => r.outcome)).toEqual(['fail', 'reply']);
    const [first, second] = fake.requests;
    // The fake stamps each request when its body has been read; the 429 left after the first stamp.
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1000 - 5);
  });

  it('429 asking for a longer wait than maxRetryDelayMs -> 429 passed on with Retry-After, not retried', async () => {
    fake.script({ kind: 'fail', status: 429, retryAfter: '30' });
    const err = await apiFailure(complete(provider({ maxRetryDelayMs: 2000 }), call()));
    expect(err.status).toBe(429);
    expect(err.type).toBe('rate_limit_error');
    expect(err.code).toBe('upstream_rate_limited');
    expect(err.retryAfter).toBe(30);
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
  });

  it(`a ${c.overloadedStatus} once is retried with backoff, then succeeds (stream)`, async () => {
    fake.script({ kind: 'fail', status: c.overloadedStatus });
    const deltas = await collect(stream(provider({ maxRetries: 1 }), call({ stream: true })));
    expect(textOf(deltas)).toBe('Hello from the fake upstream.');
    expect(fake.requests.map((r) => r.outcome)).toEqual(['fail', 'reply']);
  });

  it(`${c.overloadedStatus} on every attempt exhausts the retries -> 502 with the provider's status`, async () => {
    fake.script(...Array.from({ length: 3 }, () => ({ kind: 'fail' as const, status: c.overloadedStatus })));
    const err = await apiFailure(complete(provider({ maxRetries: 2 }), call()));
    expect(err.status).toBe(502);
    expect(err.type).toBe('upstream_error');
    expect(err.code).toBe(String(c.overloadedStatus));
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(3);
  });

  it('an upstream that never answers -> 504 after timeoutMs, not retried by default', async () => {
    fake.script({ kind: 'stall' });
    const err = await apiFailure(complete(provider({ timeoutMs: 150 }), call()));
    expect(err.status).toBe(504);
    expect(err.code).toBe('timeout');
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
    await fake.waitForAbort(); // the stalled exchange was closed, not leaked
  });

  it('a stream that falls silent mid-way -> 504 from the iterator after the content so far', async () => {
    fake.script({ kind: 'stall-mid-stream', afterPieces: 2 });
    const got: ChatDelta[] = [];
    const err = await apiFailure(
      (async () => {
        for await (const chunk of stream(provider({ idleTimeoutMs: 150 }), call({ stream: true }))) got.push(chunk);
      })(),
    );
    expect(err.status).toBe(504);
    expect(err.code).toBe('timeout');
    expect(textOf(got)).toBe('Hello from ');
    await fake.waitForAbort();
  });

  it('a stream whose connection drops mid-way -> 502 stream_interrupted from the iterator', async () => {
    fake.script({ kind: 'drop-mid-stream', afterPieces: 1 });
    const err = await apiFailure(collect(stream(provider(), call({ stream: true }))));
    expect(err.status).toBe(502);
    expect(err.code).toBe('stream_interrupted');
  });

  it("the vendor's in-stream error event -> 502 from the iterator", async () => {
    fake.script({ kind: 'stream-error', afterPieces: 1, message: 'Overloaded right now' });
    const err = await apiFailure(collect(stream(provider(), call({ stream: true }))));
    expect(err.status).toBe(502);
    expect(err.type).toBe('upstream_error');
    expect(err.message).toContain('Overloaded right now');
  });

  it(
    'abort mid-stream: the iterator throws an AbortError and the fake sees the connection closed',
    async () => {
      fake.script({ kind: 'stall-mid-stream', afterPieces: 1 });
      const controller = new AbortController();
      // Time-outs far beyond the test's own: only a prompt abort lets this test pass.
      const iterator = stream(
        provider({ timeoutMs: 60_000, idleTimeoutMs: 60_000 }),
        call({ stream: true }, { signal: controller.signal }),
      )[Symbol.asyncIterator]();
      const content = await iterator.next(); // the one piece the fake sent before falling silent
      expect(content.value).toEqual({ type: 'content', text: 'Hello ' });
      expect(fake.requests[0]?.aborted).toBe(false);
      const pending = iterator.next(); // waits on the silent upstream
      controller.abort();
      const err = await failure(pending);
      expect(isAbortError(err)).toBe(true);
      const aborted = await fake.waitForAbort();
      expect(aborted.completed).toBe(false);
    },
    ABORT_TEST_LIMIT_MS,
  );

  it(
    'abort during the wait before a retry ends the call at once with an AbortError',
    async () => {
      fake.script({ kind: 'fail', status: 429, retryAfter: '30' });
      const controller = new AbortController();
      const pending = complete(provider({ maxRetryDelayMs: 60_000 }), call({}, { signal: controller.signal }));
      while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      controller.abort();
      const err = await failure(pending); // the 30 s wait would outlast the test's time-out
      expect(isAbortError(err)).toBe(true);
      expect(fake.requests).toHaveLength(1);
    },
    ABORT_TEST_LIMIT_MS,
  );

  it(
    'abort while waiting for the response headers cancels the fetch at once',
    async () => {
      fake.script({ kind: 'stall' });
      const controller = new AbortController();
      const pending = complete(provider({ timeoutMs: 60_000 }), call({}, { signal: controller.signal }));
      while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      controller.abort();
      const err = await failure(pending);
      expect(isAbortError(err)).toBe(true);
      await fake.waitForAbort();
    },
    ABORT_TEST_LIMIT_MS,
  );

  it('an unreachable upstream -> 502 network_error after the retries', async () => {
    const closed = await startFakeUpstream(c.name);
    const url = closed.baseUrl;
    await closed.close();
    const err = await apiFailure(
      complete(createProvider(c.name, { baseUrl: url, maxRetries: 1, retryBaseDelayMs: 1 }), call()),
    );
    expect(err.status).toBe(502);
    expect(err.code).toBe('network_error');
    expect(err.message).toContain(c.name);
  });

  describe('hostile upstreams (issue 9)', () => {
    // Each read delivers a byte well within idleTimeoutMs, so only the whole-answer deadline can end these.
    const hostile = () => provider({ timeoutMs: 5000, idleTimeoutMs: 5000, deadlineMs: 600, maxRetries: 0 });

    it('a JSON answer trickling one byte at a time is cut at the deadline: 504 deadline_exceeded, upstream request aborted', async () => {
      fake.script({ kind: 'trickle', intervalMs: 40 });
      const err = await apiFailure(complete(hostile(), call()));
      expect(err.status).toBe(504);
      expect(err.code).toBe('deadline_exceeded');
      expect(err.message).toContain(c.name);
      const aborted = await fake.waitForAbort();
      expect(aborted.completed).toBe(false);
    });

    it('a stream trickling one byte at a time is cut at the deadline', async () => {
      fake.script({ kind: 'trickle', intervalMs: 40 });
      const err = await apiFailure(collect(stream(hostile(), call())));
      expect(err.code).toBe('deadline_exceeded');
      await fake.waitForAbort();
    });

    it('a stream of SSE comments forever is cut at the deadline after the content so far', async () => {
      fake.script({ kind: 'comments-forever', afterPieces: 1, intervalMs: 30 });
      const got: ChatDelta[] = [];
      const err = await apiFailure(
        (async () => {
          for await (const delta of stream(hostile(), call())) got.push(delta);
        })(),
      );
      expect(err.status).toBe(504);
      expect(err.code).toBe('deadline_exceeded');
      expect(textOf(got)).toBe('Hello ');
      expect(finishOf(got)).toEqual([]);
      const aborted = await fake.waitForAbort();
      expect(aborted.completed).toBe(false);
    });

    it('the deadline also bounds the wait before a retry: a hint longer than the time left is not waited for', async () => {
      fake.script({ kind: 'fail', status: 429, retryAfter: '2' });
      const err = await apiFailure(
        complete(provider({ deadlineMs: 1000, maxRetries: 2, maxRetryDelayMs: 5000 }), call()),
      );
      expect(err.status).toBe(429);
      expect(err.code).toBe('upstream_rate_limited');
      expect(err.retryAfter).toBe(2);
      expect(fake.requests).toHaveLength(1);
    });

    it.each([
      ['JSON', false],
      ['stream', true],
    ])(
      'a redirect to another host (%s) is not followed: the other host gets nothing, the client a 502 upstream_redirect',
      async (_mode, streaming) => {
        const other = await startFakeUpstream(c.name);
        try {
          fake.script({ kind: 'redirect', status: 307, location: `${other.baseUrl}/stolen` });
          const err = await apiFailure(collect(provider().chat(call({ stream: streaming }))));
          expect(err.status).toBe(502);
          expect(err.type).toBe('upstream_error');
          expect(err.code).toBe('upstream_redirect');
          expect(err.message).toContain(c.name);
          expect(fake.requests).toHaveLength(1);
          expect(other.requests).toHaveLength(0);
        } finally {
          await other.close();
        }
      },
    );

    it.each([301, 302, 303, 308])('a %i is not followed either', async (status) => {
      fake.script({ kind: 'redirect', status, location: `${fake.baseUrl}/elsewhere` });
      const err = await apiFailure(complete(provider(), call()));
      expect(err.code).toBe('upstream_redirect');
      expect(fake.requests).toHaveLength(1);
    });

    it("an in-stream error event quoting the key never shows it (the call's one scrubber)", async () => {
      fake.script({ kind: 'stream-error', afterPieces: 1, message: `Unauthorized key ${API_KEY}` });
      const err = await apiFailure(collect(stream(provider(), call())));
      expect(err.status).toBe(502);
      expect(err.message).toContain('Unauthorized key');
      expect(JSON.stringify(err.toBody())).not.toContain(API_KEY);
      expect(err.message).not.toContain('0123456789abcdef');
    });

    it('a JSON error body quoting the key never shows it', async () => {
      fake.script({ kind: 'fail', status: 400, message: `The key ${API_KEY} is not allowed to do that` });
      const err = await apiFailure(complete(provider(), call()));
      expect(err.status).toBe(400);
      expect(err.message).toContain('is not allowed to do that');
      expect(JSON.stringify(err.toBody())).not.toContain(API_KEY);
    });

    it.each([
      ['retryAfterMs', '1e308', 86_400],
      ['retryAfterMs', 'Infinity', 86_400],
      // Gemini carries this one as google.rpc.RetryInfo.retryDelay in the body; the others as a Retry-After header.
      ['retryAfter', '99999999999999999999', 86_400],
    ] as const)('an upstream hint %s: %s is clamped before it becomes Retry-After', async (field, value, expected) => {
      fake.script({ kind: 'fail', status: 429, [field]: value });
      const err = await apiFailure(complete(provider({ maxRetries: 2 }), call()));
      expect(err.status).toBe(429);
      expect(err.retryAfter).toBe(expected);
      expect(fake.requests).toHaveLength(1);
    });

    it.each(['-5', 'NaN', 'soon'])('an unusable hint (%s) is ignored: backoff, then success', async (value) => {
      fake.script({ kind: 'fail', status: 429, retryAfterMs: value });
      const result = await complete(provider({ maxRetries: 1 }), call());
      expect(result.choices[0]?.message.content).toBe('Hello from the fake upstream.');
      expect(fake.requests).toHaveLength(2);
    });
  });

  describe('tools, tool_choice, parallel_tool_calls and response_format (issue 11)', () => {
    const WEATHER: FunctionTool = {
      name: 'get_weather',
      description: 'Current weather of a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'City name' },
          unit: { type: ['string', 'null'], enum: ['c', 'f', null] },
        },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
      strict: true,
    };
    const TIME: FunctionTool = { name: 'get_time', parameters: { type: 'object', properties: {} }, strict: false };
    const ARGS = { city: 'Paris', unit: 'c' };
    const withTools = (extra: Partial<ChatRequest> = {}): Partial<ChatRequest> => ({
      tools: [WEATHER, TIME],
      toolChoice: 'auto',
      ...extra,
    });

    it("sends the declared functions in the vendor's shape (Gemini: its Schema subset) with tool_choice auto", async () => {
      await complete(provider(), call(withTools()));
      const seen = fake.lastRequest();
      expect(seen.tools?.map((t) => [t.name, t.description])).toEqual([
        ['get_weather', 'Current weather of a city'],
        ['get_time', undefined],
      ]);
      if (c.name === 'gemini') {
        expect(seen.tools?.[0]?.parameters).toEqual({
          type: 'OBJECT',
          properties: {
            city: { type: 'STRING', description: 'City name' },
            unit: { type: 'STRING', nullable: true, enum: ['c', 'f', null] },
          },
          required: ['city', 'unit'],
        });
      } else {
        expect(seen.tools?.[0]?.parameters).toEqual(WEATHER.parameters);
      }
      expect(seen.toolChoice).toBe('auto');
    });

    it.each([
      ['required', 'required'],
      ['none', 'none'],
      ['a named function', { name: 'get_time' }],
    ] as const)('maps tool_choice %s', async (_label, choice) => {
      await complete(provider(), call(withTools({ toolChoice: choice })));
      expect(fake.lastRequest().toolChoice).toEqual(choice);
    });

    it("passes parallel_tool_calls false on where the vendor has a switch (Gemini has none); true is every vendor's default", async () => {
      await complete(provider(), call(withTools({ parallelToolCalls: false })));
      expect(fake.lastRequest().parallelToolCalls).toBe(c.name === 'gemini' ? undefined : false);
      await complete(provider(), call(withTools({ parallelToolCalls: true })));
      // OpenAI / Mistral: the field is left out (their default); Anthropic: tool_choice without disable_parallel_tool_use.
      expect(fake.lastRequest().parallelToolCalls).toBe(c.name === 'anthropic' ? true : undefined);
    });

    it('sends no tool fields for a request without tools', async () => {
      await complete(provider(), call());
      const seen = fake.lastRequest();
      expect([seen.tools, seen.toolChoice, seen.parallelToolCalls, seen.responseFormat]).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    });

    it('a JSON answer with a call -> message.tool_calls (content null, finish_reason tool_calls)', async () => {
      fake.setReply({ toolCalls: [{ name: 'get_weather', arguments: ARGS }] });
      const result = await complete(provider(), call(withTools()));
      const choice = result.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBeNull();
      expect(choice.message.tool_calls).toHaveLength(1);
      const tc = choice.message.tool_calls![0]!;
      expect(tc.id).toMatch(/^\S{5,}$/);
      expect(tc.type).toBe('function');
      expect(tc.function.name).toBe('get_weather');
      expect(JSON.parse(tc.function.arguments)).toEqual(ARGS);
    });

    it('a streamed call -> tool_call deltas (id and name first, then arguments) and OpenAI delta.tool_calls chunks', async () => {
      fake.setReply({ toolCalls: [{ name: 'get_weather', arguments: ARGS }] });
      const deltas = await collect(stream(provider(), call(withTools({ includeUsage: true }))));
      const calls = deltas.filter((d) => d.type === 'tool_call');
      expect(calls[0]).toMatchObject({ index: 0, name: 'get_weather' });
      expect(calls[0]?.id).toBeTruthy();
      expect(calls.slice(1).every((d) => d.index === 0 && d.id === undefined && d.name === undefined)).toBe(true);
      expect(JSON.parse(calls.map((d) => d.arguments).join(''))).toEqual(ARGS);
      expect(finishOf(deltas).map((d) => d.reason)).toEqual(['tool_calls']);

      const chunks = chunksOf(deltas, c.model, true);
      const toolChunks = chunks.filter((ch) => ch.choices[0]?.delta.tool_calls !== undefined);
      expect(toolChunks[0]?.choices[0]?.delta.tool_calls).toEqual([
        {
          index: 0,
          id: calls[0]?.id,
          type: 'function',
          function: { name: 'get_weather', arguments: calls[0]?.arguments },
        },
      ]);
      for (const ch of toolChunks.slice(1))
        expect(Object.keys(ch.choices[0]!.delta.tool_calls![0]!)).toEqual(['index', 'function']);
      expect(chunks.find((ch) => ch.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('tool_calls');
      expect(completionOf(deltas, c.model).choices[0]?.message.tool_calls?.[0]?.function.arguments).toBe(
        JSON.stringify(ARGS),
      );
    });

    it('parallel calls get indices 0 and 1, JSON and stream', async () => {
      fake.setReply({
        toolCalls: [
          { name: 'get_weather', arguments: ARGS },
          { name: 'get_time', arguments: {} },
        ],
      });
      const json = await complete(provider(), call(withTools()));
      expect(
        json.choices[0]?.message.tool_calls?.map((t) => [t.function.name, JSON.parse(t.function.arguments)]),
      ).toEqual([
        ['get_weather', ARGS],
        ['get_time', {}],
      ]);
      const deltas = await collect(stream(provider(), call(withTools())));
      const firsts = deltas.filter((d) => d.type === 'tool_call' && d.name !== undefined);
      expect(firsts.map((d) => (d.type === 'tool_call' ? [d.index, d.name] : null))).toEqual([
        [0, 'get_weather'],
        [1, 'get_time'],
      ]);
      const answer = completionOf(deltas, c.model);
      expect(answer.choices[0]?.message.tool_calls?.map((t) => JSON.parse(t.function.arguments))).toEqual([ARGS, {}]);
      expect(new Set(answer.choices[0]?.message.tool_calls?.map((t) => t.id)).size).toBe(2);
    });

    it('text before a call keeps its content', async () => {
      fake.setReply({ text: 'Let me check.', toolCalls: [{ name: 'get_time', arguments: {} }] });
      const json = await complete(provider(), call(withTools()));
      expect(json.choices[0]?.message.content).toBe('Let me check.');
      expect(json.choices[0]?.message.tool_calls?.[0]?.function.name).toBe('get_time');
      const deltas = await collect(stream(provider(), call(withTools())));
      expect(textOf(deltas)).toBe('Let me check.');
      expect(finishOf(deltas)[0]?.reason).toBe('tool_calls');
    });

    it('translates a history with an assistant call and its tool result (the vendor checks they pair up)', async () => {
      const messages: ChatMessage[] = [
        { role: 'system', content: 'Use tools.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_abc123XYZ', name: 'get_weather', arguments: JSON.stringify(ARGS) }],
        },
        { role: 'tool', content: '{"temperature":21}', toolCallId: 'call_abc123XYZ' },
        { role: 'user', content: 'And in words?' },
      ];
      fake.setReply({ text: 'It is 21 degrees.' });
      const result = await complete(provider(), call(withTools({ messages })));
      expect(result.choices[0]?.message.content).toBe('It is 21 degrees.');
      const seen = fake.lastRequest();
      expect(seen.system).toBe('Use tools.');
      const assistant = seen.messages.find((m) => m.role === 'assistant');
      expect(assistant?.toolCalls?.map((t) => [t.name, t.arguments])).toEqual([['get_weather', ARGS]]);
      const tool = seen.messages.find((m) => m.role === 'tool');
      expect(JSON.parse(tool!.content)).toEqual({ temperature: 21 });
      if (c.name === 'gemini') expect(tool?.toolName).toBe('get_weather');
      else expect(tool?.toolCallId).toBe('call_abc123XYZ');
      expect(seen.messages.at(-1)).toMatchObject({ role: 'user', content: 'And in words?' });
    });

    it("a tool message answering no known call is a 400 where the vendor needs the function name (Gemini), else the vendor's own 400", async () => {
      const messages: ChatMessage[] = [
        { role: 'user', content: 'Hi' },
        { role: 'tool', content: 'orphan', toolCallId: 'call_nowhere' },
      ];
      const err = await apiFailure(complete(provider(), call(withTools({ messages }))));
      expect(err.status).toBe(400);
      if (c.name === 'gemini') {
        expect(err.param).toBe('messages[1].tool_call_id');
        expect(fake.requests).toHaveLength(0);
      }
    });

    // Gemini only: declared for that provider alone (not a skip under the others).
    if (c.name === 'gemini')
      it("Gemini 3: a call's thoughtSignature travels in its id and goes back with the history", async () => {
        fake.setReply({ toolCalls: [{ name: 'get_weather', arguments: ARGS }] });
        const gemini3 = (request: Partial<ChatRequest>) => call(request, { model: 'gemini-3-pro-preview' });
        const deltas = await collect(stream(provider(), gemini3(withTools())));
        const first = deltas.find((d) => d.type === 'tool_call');
        const id = first?.type === 'tool_call' ? first.id! : '';
        const signature = id.slice(id.indexOf('~') + 1);
        expect(id).toMatch(/^call_[A-Za-z0-9_-]{24}~/);
        expect(signature).toMatch(/^c2lnbmF0dXJl\+\//);

        const history = (callId: string): ChatMessage[] => [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: callId, name: 'get_weather', arguments: JSON.stringify(ARGS) }],
          },
          { role: 'tool', content: '{"temperature":21}', toolCallId: callId },
        ];
        fake.setReply({ text: 'It is 21 degrees.' });
        const ok = await complete(provider(), gemini3(withTools({ messages: history(id) })));
        expect(ok.choices[0]?.message.content).toBe('It is 21 degrees.');
        expect(fake.lastRequest().messages.find((m) => m.role === 'assistant')?.toolCalls?.[0]?.signature).toBe(
          signature,
        );

        const err = await apiFailure(
          complete(provider(), gemini3(withTools({ messages: history('call_without_signature') }))),
        );
        expect(err.status).toBe(400);
        expect(err.message).toContain('thought_signature');
      });

    it("response_format json_schema is sent as the vendor's structured output", async () => {
      const schema = {
        type: 'object',
        properties: { answer: { type: 'string' } },
        required: ['answer'],
        additionalProperties: false,
      };
      fake.setReply({ text: '{"answer":"yes"}' });
      const result = await complete(
        provider(),
        call({
          responseFormat: {
            type: 'json_schema',
            name: 'reply',
            schema,
            strict: true,
            schemaParam: 'response_format.json_schema.schema',
          },
        }),
      );
      expect(JSON.parse(result.choices[0]!.message.content!)).toEqual({ answer: 'yes' });
      const seen = fake.lastRequest();
      expect(seen.responseFormat?.type).toBe('json_schema');
      const sent = seen.responseFormat?.type === 'json_schema' ? seen.responseFormat.schema : undefined;
      if (c.name === 'gemini')
        expect(sent).toEqual({ type: 'OBJECT', properties: { answer: { type: 'STRING' } }, required: ['answer'] });
      else expect(sent).toEqual(schema);
    });

    it(
      c.name === 'anthropic'
        ? 'response_format json_object is a 400 naming it (Anthropic needs a schema)'
        : 'response_format json_object is sent as JSON mode',
      async () => {
        if (c.name === 'anthropic') {
          const err = await apiFailure(complete(provider(), call({ responseFormat: { type: 'json_object' } })));
          expect(err).toMatchObject({ status: 400, param: 'response_format' });
          expect(fake.requests).toHaveLength(0);
        } else {
          await complete(provider(), call({ responseFormat: { type: 'json_object' } }));
          expect(fake.lastRequest().responseFormat).toEqual({ type: 'json_object' });
        }
      },
    );
  });

  it('never puts the API key in an error (all failures of this suite)', () => {
    expect(seenErrors.length).toBeGreaterThan(10);
    for (const err of seenErrors) {
      const text =
        err instanceof ApiError ? `${err.message} ${JSON.stringify(err.toBody())}` : String((err as Error).message);
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain('SECRET');
    }
  });
});
