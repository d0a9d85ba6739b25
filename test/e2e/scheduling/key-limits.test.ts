import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess } from '../../helpers/hearth-process.ts';
import { postChat } from '../../helpers/chat-request.ts';
import { serveNeverStopping } from '../../helpers/served-model.ts';
import { callApi, until } from '../../helpers/management-client.ts';
import { holdStream as holdStreamOf } from '../../helpers/held-stream.ts';

/**
 * Per-key limits on the shared endpoint, end to end: keys created with limits through the API, OpenAI's
 * x-ratelimit-* headers on every answer of a limited key, the 429 shape, and concurrency. The model never
 * stops on its own (only max_tokens or a cancel end a generation), so a streaming request holds its key's
 * concurrency slot for as long as the test wants; two engine slots let another key's request run meanwhile.
 */
let hearth: HearthProcess;
const MODEL = 'local/never-stops';

/** Held streams outlast the test: 65,536 tokens of context take this model over 15 s to fill (2,048 took 1-2 s). */
const LONG_CONTEXT = 65_536;

beforeAll(async () => {
  hearth = await serveNeverStopping(MODEL, { 'max-tokens': 100000, 'context-size': LONG_CONTEXT }, {}, LONG_CONTEXT);
});

afterAll(async () => {
  await hearth?.stop();
});

type Limits = { requestsPerMinute?: number | null; tokensPerMinute?: number | null; maxConcurrent?: number | null };
type ErrorBody = {
  error: { message: string; type: string; code: string | null; param: string | null; limit?: string };
};

async function createKey(name: string, limits?: Limits): Promise<{ id: string; key: string; limits: Limits }> {
  const r = await callApi<{ id: string; key: string; limits: Limits }>(
    hearth,
    'POST',
    '/api/v1/keys',
    limits === undefined ? { name } : { name, limits },
  );
  expect(r.status).toBe(201);
  return r.body;
}

async function chat(key: string, maxTokens = 3, body: Record<string, unknown> = {}) {
  const r = await postChat(
    { baseUrl: hearth.baseUrl, key },
    { model: MODEL, messages: [{ role: 'user', content: 'go' }], max_tokens: maxTokens, ...body },
  );
  return { status: r.status, headers: r.headers, body: (await r.json()) as Record<string, any> & ErrorBody };
}

/** `r` is the 429 rate_limit_exceeded that names the key limit `field` (param limits.<field>) and its `limit` kind. */
function expectRefusedBy(r: Awaited<ReturnType<typeof chat>>, field: keyof Limits, limit: string): void {
  expect(r.status).toBe(429);
  expect(r.body.error).toMatchObject({ code: 'rate_limit_exceeded', param: `limits.${field}`, limit });
}

/** Opens a stream for `key` and resolves once its first event arrived: the request is in progress until `close()`. */
/** hearth_num_requests_running, summed over its labels. */
async function runningRequests(): Promise<number> {
  const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
  return [...text.matchAll(/^hearth_num_requests_running\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

const holdStream = (key: string, extra: Record<string, unknown> = {}) =>
  holdStreamOf(hearth.baseUrl, MODEL, key, extra);

describe('per-key limits', () => {
  it('a key without limits gets no x-ratelimit headers', async () => {
    const r = await chat(hearth.key);
    expect(r.status).toBe(200);
    expect([...r.headers.keys()].filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
  });

  it('requests per minute: OpenAI headers on every answer, then 429 rate_limit_exceeded + Retry-After', async () => {
    const k = await createKey('rpm', { requestsPerMinute: 2 });
    expect(k.limits).toEqual({
      requestsPerMinute: 2,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'interactive',
    });
    const first = await chat(k.key);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+s|1m0s)$/);
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBeNull(); // no tokens limit, no tokens trio

    // an answer that is an error still carries them (and counts)
    const invalid = await chat(k.key, 3, { temperature: 7 });
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('x-ratelimit-remaining-requests')).toBe('0');

    const limited = await chat(k.key);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toEqual({
      message: expect.stringContaining('2 requests per minute'),
      type: 'rate_limit_error',
      param: 'limits.requestsPerMinute',
      code: 'rate_limit_exceeded',
      limit: 'requests',
    });
    const retry = Number(limited.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(limited.headers.get('x-ratelimit-remaining-requests')).toBe('0');

    // GET /models shows the state without counting
    const models = await fetch(`${hearth.baseUrl}/api/inference/v1/models`, {
      headers: { authorization: `Bearer ${k.key}` },
    });
    expect(models.status).toBe(200);
    expect(models.headers.get('x-ratelimit-remaining-requests')).toBe('0');

    // other keys are not affected
    expect((await chat(hearth.key)).status).toBe(200);
  });

  it('tokens per minute: counted from usage when a request finishes; the official SDK sees a RateLimitError', async () => {
    const k = await createKey('tpm', { tokensPerMinute: 10 });
    const first = await chat(k.key, 12);
    expect(first.status).toBe(200);
    const used = first.body.usage.total_tokens as number;
    expect(used).toBeGreaterThanOrEqual(12);
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('10');
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('10'); // decided before this request's usage was known
    const limited = await chat(k.key);
    expectRefusedBy(limited, 'tokensPerMinute', 'tokens');
    expect(limited.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
    expect(limited.headers.get('x-ratelimit-reset-tokens')).toMatch(/^(\d+s|1m0s)$/);

    const client = new OpenAI({ apiKey: k.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
    const err = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'go' }], max_tokens: 2 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('rate_limit_exceeded');
  });

  it('max concurrent: one key at its cap is refused while another key flows; the slot comes back after a disconnect', async () => {
    const busy = await createKey('busy', { maxConcurrent: 1 });
    const other = await createKey('other', { maxConcurrent: 1 });
    const stream = await holdStream(busy.key);
    expect(stream.headers['x-ratelimit-limit-concurrent']).toBe('1');
    expect(stream.headers['x-ratelimit-remaining-concurrent']).toBe('0');

    const refused = await chat(busy.key);
    expectRefusedBy(refused, 'maxConcurrent', 'concurrent');
    expect(refused.headers.get('retry-after')).toBe('1');

    const flowing = await chat(other.key, 4);
    expect(flowing.status).toBe(200);
    expect(flowing.body.usage.completion_tokens).toBe(4);
    expect(flowing.headers.get('x-ratelimit-remaining-concurrent')).toBe('0'); // its own slot, while it ran

    stream.close(); // the client goes away mid-stream: its slot must be released
    await until(
      async () => (await chat(busy.key)).status === 200,
      'the busy key to be admitted again after its stream was dropped',
    );
  });

  it('a key revoked mid-request ends its stream and its JSON answer with api_key_revoked, and frees the slots', async () => {
    const doomed = await createKey('doomed');
    const post = (stream: boolean) =>
      fetch(`${hearth.baseUrl}/api/inference/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${doomed.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'go' }], stream, max_tokens: 50_000 }),
      });
    const streamed = await post(true);
    expect(streamed.status).toBe(200);
    const reader = streamed.body!.getReader();
    await reader.read(); // generating
    const json = post(false);
    await until(async () => (await runningRequests()) === 2, 'both requests to run');
    expect((await callApi(hearth, 'DELETE', `/api/v1/keys/${doomed.id}`)).status).toBe(200);

    // Without the check both would run on to max_tokens (over 15 s of this model); the test's 10 s bound would fail.
    let text = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(text).toContain('"code":"api_key_revoked"');
    expect(text).not.toContain('[DONE]');
    const answered = await json;
    expect(answered.status).toBe(401);
    expect(((await answered.json()) as ErrorBody).error.code).toBe('api_key_revoked');
    await until(async () => (await runningRequests()) === 0, 'the slots to be free');
  }, 10_000);

  it('PATCH changes limits for the next request; null lifts them; bad limits are 400 naming the field', async () => {
    const k = await createKey('patched', { maxConcurrent: 1 });
    const stream = await holdStream(k.key);
    expect((await chat(k.key)).status).toBe(429);
    const patched = await callApi<{ limits: Limits }>(hearth, 'PATCH', `/api/v1/keys/${k.id}`, {
      limits: { maxConcurrent: 2, requestsPerMinute: 100 },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.limits).toEqual({
      requestsPerMinute: 100,
      tokensPerMinute: null,
      maxConcurrent: 2,
      priority: 'interactive',
    });
    const second = await chat(k.key);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-ratelimit-limit-requests')).toBe('100');
    stream.close();

    const lifted = await callApi<{ limits: Limits }>(hearth, 'PATCH', `/api/v1/keys/${k.id}`, { limits: null });
    expect(lifted.body.limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'interactive',
    });
    expect([...(await chat(k.key)).headers.keys()].filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);

    const list = await callApi<{ data: Array<{ id: string; limits: Limits; key?: string }> }>(
      hearth,
      'GET',
      '/api/v1/keys',
    );
    const listed = list.body.data.find((x) => x.id === k.id)!;
    expect(listed.limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'interactive',
    });
    expect(JSON.stringify(list.body)).not.toContain(k.key);

    const bad = await callApi<ErrorBody>(hearth, 'PATCH', `/api/v1/keys/${k.id}`, { limits: { maxConcurrent: 0 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('limits.maxConcurrent');
    expect(
      (await callApi<ErrorBody>(hearth, 'POST', '/api/v1/keys', { name: 'x', limits: { perHour: 3 } })).body.error.code,
    ).toBe('unknown_parameter');
    expect((await callApi<ErrorBody>(hearth, 'PATCH', '/api/v1/keys/nope', { limits: null })).body.error.code).toBe(
      'key_not_found',
    );
  });
});
