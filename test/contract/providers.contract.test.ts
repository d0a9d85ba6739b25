import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors/api-error.ts';
import { type ChatRequest, plainChatFields } from '../../src/protocol/chat-request.ts';
import type { ChatCompletionChunk } from '../../src/protocol/openai-types.ts';
import { createProvider, isAbortError, type ProviderCall, type ProviderName, type ProviderOptions } from '../../src/providers/index.ts';
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
  { name: 'anthropic', model: 'claude-3-5-haiku-latest', lengthReason: 'max_tokens', overloadedStatus: 529, supportsSeed: false },
  { name: 'gemini', model: 'gemini-2.0-flash', lengthReason: 'MAX_TOKENS', overloadedStatus: 503, supportsSeed: true },
  { name: 'mistral', model: 'mistral-small-latest', lengthReason: 'model_length', overloadedStatus: 503, supportsSeed: true },
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

async function collect(iterable: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const chunk of iterable) out.push(chunk);
  return out;
}

const textOf = (chunks: ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

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
    createProvider(c.name, { baseUrl: fake.baseUrl, timeoutMs: 2000, idleTimeoutMs: 2000, retryBaseDelayMs: 5, maxRetryDelayMs: 3000, ...options });

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
    const result = await provider().complete(call());
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
    const json = await provider().complete(call());
    expect(json.choices[0]?.finish_reason).toBe('length');
    const chunks = await collect(provider().stream(call({ stream: true })));
    expect(chunks.filter((ch) => ch.choices[0]?.finish_reason).map((ch) => ch.choices[0]?.finish_reason)).toEqual(['length']);
  });

  it('streams chunks that reassemble the text: role first, one finish chunk, then the include_usage chunk', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    fake.setReply({ text, usage: { prompt: 9, completion: 10 } });
    const chunks = await collect(provider().stream(call({ stream: true, includeUsage: true })));
    expect(fake.lastRequest().stream).toBe(true);

    const first = chunks[0];
    expect(first?.choices[0]?.delta.role).toBe('assistant');
    expect(new Set(chunks.map((ch) => ch.id)).size).toBe(1);
    expect(new Set(chunks.map((ch) => ch.created)).size).toBe(1);
    expect(chunks.every((ch) => ch.model === c.model && ch.object === 'chat.completion.chunk')).toBe(true);
    expect(first?.id).toMatch(/^chatcmpl-/);
    expect(textOf(chunks)).toBe(text);
    expect(chunks.filter((ch) => (ch.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThan(1);

    const finishIndex = chunks.findIndex((ch) => ch.choices[0]?.finish_reason != null);
    expect(chunks[finishIndex]?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.slice(finishIndex + 1).every((ch) => ch.choices.length === 0)).toBe(true);
    const last = chunks[chunks.length - 1];
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 10, total_tokens: 19 });
  });

  it('sends no usage chunk when include_usage was not asked for', async () => {
    const chunks = await collect(provider().stream(call({ stream: true, includeUsage: false })));
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
    await provider().complete(call({ messages, stop: ['END'], maxTokens: 64, topP: 0.5 }, { defaultTemperature: 0.3 }));
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

    await provider().complete(call({ temperature: 0.9 }, { defaultTemperature: 0.3 }));
    expect(fake.lastRequest().temperature).toBe(0.9);
    await provider().complete(call());
    expect(fake.lastRequest().temperature).toBeUndefined();
    // OpenAI's range is 0..2; Anthropic's is 0..1 and Hearth clamps (the Anthropic fake rejects > 1).
    await provider().complete(call({ temperature: 1.5 }));
    expect(fake.lastRequest().temperature).toBe(c.name === 'anthropic' ? 1 : 1.5);
  });

  it(c.supportsSeed ? 'passes the seed on' : 'rejects a seed it cannot honour with a 400 naming it', async () => {
    if (c.supportsSeed) {
      await provider().complete(call({ seed: 42 }));
      expect(fake.lastRequest().seed).toBe(42);
    } else {
      const err = await apiFailure(provider().complete(call({ seed: 42 })));
      expect(err.status).toBe(400);
      expect(err.param).toBe('seed');
      expect(fake.requests).toHaveLength(0);
    }
  });

  it("a wrong provider key (the vendor's own rejection) -> 502 naming the provider, key not echoed", async () => {
    const wrongKey = 'sk-wrong-SECRET-99999999999';
    const err = await apiFailure(provider().complete(call({}, { apiKey: wrongKey })));
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
    const err = await apiFailure(provider().complete(call()));
    expect(err.status).toBe(502);
    expect(err.code).toBe(String(status));
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
  });

  it('upstream 400 -> 400 invalid_request_error carrying the provider message', async () => {
    fake.script({ kind: 'fail', status: 400, message: 'prompt is malformed in some vendor way' });
    const err = await apiFailure(provider().complete(call()));
    expect(err.status).toBe(400);
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toContain('prompt is malformed in some vendor way');
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
  });

  it('429 with a retry hint is retried after at least the hinted wait, then succeeds', async () => {
    fake.script({ kind: 'fail', status: 429, retryAfter: '1' });
    const result = await provider({ maxRetries: 2 }).complete(call());
    expect(result.choices[0]?.message.content).toBe('Hello from the fake upstream.');
    expect(fake.requests.map((r) => r.outcome)).toEqual(['fail', 'reply']);
    const [first, second] = fake.requests;
    // The fake stamps each request when its body has been read; the 429 left after the first stamp.
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1000 - 5);
  });

  it('429 asking for a longer wait than maxRetryDelayMs -> 429 passed on with Retry-After, not retried', async () => {
    fake.script({ kind: 'fail', status: 429, retryAfter: '30' });
    const err = await apiFailure(provider({ maxRetryDelayMs: 2000 }).complete(call()));
    expect(err.status).toBe(429);
    expect(err.type).toBe('rate_limit_error');
    expect(err.code).toBe('upstream_rate_limited');
    expect(err.retryAfter).toBe(30);
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
  });

  it(`a ${c.overloadedStatus} once is retried with backoff, then succeeds (stream)`, async () => {
    fake.script({ kind: 'fail', status: c.overloadedStatus });
    const chunks = await collect(provider({ maxRetries: 1 }).stream(call({ stream: true })));
    expect(textOf(chunks)).toBe('Hello from the fake upstream.');
    expect(fake.requests.map((r) => r.outcome)).toEqual(['fail', 'reply']);
  });

  it(`${c.overloadedStatus} on every attempt exhausts the retries -> 502 with the provider's status`, async () => {
    fake.script(...Array.from({ length: 3 }, () => ({ kind: 'fail' as const, status: c.overloadedStatus })));
    const err = await apiFailure(provider({ maxRetries: 2 }).complete(call()));
    expect(err.status).toBe(502);
    expect(err.type).toBe('upstream_error');
    expect(err.code).toBe(String(c.overloadedStatus));
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(3);
  });

  it('an upstream that never answers -> 504 after timeoutMs, not retried by default', async () => {
    fake.script({ kind: 'stall' });
    const err = await apiFailure(provider({ timeoutMs: 150 }).complete(call()));
    expect(err.status).toBe(504);
    expect(err.code).toBe('timeout');
    expect(err.message).toContain(c.name);
    expect(fake.requests).toHaveLength(1);
    await fake.waitForAbort(); // the stalled exchange was closed, not leaked
  });

  it('a stream that falls silent mid-way -> 504 from the iterator after the content so far', async () => {
    fake.script({ kind: 'stall-mid-stream', afterPieces: 2 });
    const got: ChatCompletionChunk[] = [];
    const err = await apiFailure(
      (async () => {
        for await (const chunk of provider({ idleTimeoutMs: 150 }).stream(call({ stream: true }))) got.push(chunk);
      })(),
    );
    expect(err.status).toBe(504);
    expect(got[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(textOf(got)).toBe('Hello from ');
    await fake.waitForAbort();
  });

  it('a stream whose connection drops mid-way -> 502 stream_interrupted from the iterator', async () => {
    fake.script({ kind: 'drop-mid-stream', afterPieces: 1 });
    const err = await apiFailure(collect(provider().stream(call({ stream: true }))));
    expect(err.status).toBe(502);
    expect(err.code).toBe('stream_interrupted');
  });

  it("the vendor's in-stream error event -> 502 from the iterator", async () => {
    fake.script({ kind: 'stream-error', afterPieces: 1, message: 'Overloaded right now' });
    const err = await apiFailure(collect(provider().stream(call({ stream: true }))));
    expect(err.status).toBe(502);
    expect(err.type).toBe('upstream_error');
    expect(err.message).toContain('Overloaded right now');
  });

  it('abort mid-stream: the iterator throws an AbortError and the fake sees the connection closed', async () => {
    fake.script({ kind: 'stall-mid-stream', afterPieces: 1 });
    const controller = new AbortController();
    // Time-outs far beyond the test's own: only a prompt abort lets this test pass.
    const iterator = provider({ timeoutMs: 60_000, idleTimeoutMs: 60_000 }).stream(call({ stream: true }, { signal: controller.signal }))[Symbol.asyncIterator]();
    const role = await iterator.next();
    expect(role.value?.choices[0]?.delta.role).toBe('assistant');
    const content = await iterator.next(); // the one piece the fake sent before falling silent
    expect(content.value?.choices[0]?.delta.content).toBe('Hello ');
    expect(fake.requests[0]?.aborted).toBe(false);
    const pending = iterator.next(); // waits on the silent upstream
    controller.abort();
    const err = await failure(pending);
    expect(isAbortError(err)).toBe(true);
    const aborted = await fake.waitForAbort();
    expect(aborted.completed).toBe(false);
  }, ABORT_TEST_LIMIT_MS);

  it('abort during the wait before a retry ends the call at once with an AbortError', async () => {
    fake.script({ kind: 'fail', status: 429, retryAfter: '30' });
    const controller = new AbortController();
    const pending = provider({ maxRetryDelayMs: 60_000 }).complete(call({}, { signal: controller.signal }));
    while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    const err = await failure(pending); // the 30 s wait would outlast the test's time-out
    expect(isAbortError(err)).toBe(true);
    expect(fake.requests).toHaveLength(1);
  }, ABORT_TEST_LIMIT_MS);

  it('abort while waiting for the response headers cancels the fetch at once', async () => {
    fake.script({ kind: 'stall' });
    const controller = new AbortController();
    const pending = provider({ timeoutMs: 60_000 }).complete(call({}, { signal: controller.signal }));
    while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    const err = await failure(pending);
    expect(isAbortError(err)).toBe(true);
    await fake.waitForAbort();
  }, ABORT_TEST_LIMIT_MS);

  it('an unreachable upstream -> 502 network_error after the retries', async () => {
    const closed = await startFakeUpstream(c.name);
    const url = closed.baseUrl;
    await closed.close();
    const err = await apiFailure(createProvider(c.name, { baseUrl: url, maxRetries: 1, retryBaseDelayMs: 1 }).complete(call()));
    expect(err.status).toBe(502);
    expect(err.code).toBe('network_error');
    expect(err.message).toContain(c.name);
  });

  it('never puts the API key in an error (all failures of this suite)', () => {
    expect(seenErrors.length).toBeGreaterThan(10);
    for (const err of seenErrors) {
      const text = err instanceof ApiError ? `${err.message} ${JSON.stringify(err.toBody())}` : String((err as Error).message);
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain('SECRET');
    }
  });
});
