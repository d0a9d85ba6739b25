import { describe, expect, it } from 'vitest';
import { HearthClient, HearthError, parseRetryAfter } from '../../../examples/tool-server/hearth-client.ts';

const sse = (...events: string[]) =>
  new Response(events.map((e) => `data: ${e}\n\n`).join(''), {
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
  });
const delta = (content: string, finish: string | null = null) =>
  JSON.stringify({ id: 'c1', model: 'm/x', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });

function client(
  responses: Array<Response | Error>,
  extra: Partial<ConstructorParameters<typeof HearthClient>[0]> = {},
) {
  const calls: RequestInit[] = [];
  const fetchStub = (async (_url: unknown, init?: RequestInit) => {
    calls.push(init ?? {});
    const next = responses.shift();
    if (!next) throw new Error('no more responses');
    if (next instanceof Error) throw next;
    return next;
  }) as typeof fetch;
  return {
    calls,
    hearth: new HearthClient({
      baseUrl: 'http://hearth.test/',
      apiKey: 'hk_a_b',
      baseRetryDelayMs: 1,
      fetch: fetchStub,
      ...extra,
    }),
  };
}

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

describe('HearthClient', () => {
  it('sends a streaming request and assembles the deltas', async () => {
    const { hearth, calls } = client([sse(delta('Hel'), delta('lo', 'stop'), '[DONE]')]);
    const pieces: string[] = [];
    const r = await hearth.complete(
      { model: 'm/x', messages: [{ role: 'user', content: 'hi' }] },
      { onDelta: (t) => pieces.push(t) },
    );
    expect(r).toMatchObject({ content: 'Hello', finish_reason: 'stop', model: 'm/x', attempts: 1 });
    expect(pieces).toEqual(['Hel', 'lo']);
    expect(JSON.parse(calls[0]!.body as string)).toMatchObject({ model: 'm/x', stream: true });
    expect((calls[0]!.headers as Record<string, string>).authorization).toBe('Bearer hk_a_b');
  });

  it('retries connection failures, then gives up with a network error', async () => {
    const ok = client([new TypeError('fetch failed'), sse(delta('x', 'stop'), '[DONE]')]);
    expect((await ok.hearth.complete({ model: 'm', messages: [] })).attempts).toBe(2);
    const bad = client([new TypeError('fetch failed'), new TypeError('fetch failed')], { maxRetries: 1 });
    await expect(bad.hearth.complete({ model: 'm', messages: [] })).rejects.toMatchObject({ kind: 'network' });
  });

  it('does not retry a 400 and reports its message and code', async () => {
    const { hearth, calls } = client([
      new Response(JSON.stringify({ error: { message: 'bad temperature', code: null } }), { status: 400 }),
    ]);
    const err = await hearth.complete({ model: 'm', messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HearthError);
    expect(err).toMatchObject({ kind: 'http', status: 400 });
    expect((err as Error).message).toContain('bad temperature');
    expect(calls.length).toBe(1);
  });

  it('stops after maxRetries retryable answers', async () => {
    const busy = () => new Response('{"error":{"message":"full"}}', { status: 503, headers: { 'retry-after': '0' } });
    const { hearth, calls } = client([busy(), busy(), busy()], { maxRetries: 2 });
    await expect(hearth.complete({ model: 'm', messages: [] })).rejects.toMatchObject({
      status: 503,
      retryAfterSeconds: 0,
    });
    expect(calls.length).toBe(3);
  });

  it('accepts a non-streamed JSON completion', async () => {
    const body = {
      id: 'c',
      model: 'm/x',
      choices: [{ message: { content: 'whole' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    const { hearth } = client([
      new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } }),
    ]);
    expect(await hearth.complete({ model: 'm', messages: [] })).toMatchObject({
      content: 'whole',
      finish_reason: 'length',
      usage: body.usage,
    });
  });

  it("rejects with the caller's abort reason", async () => {
    const c = new AbortController();
    const reason = new Error('caller gave up');
    c.abort(reason);
    const { hearth } = client([sse('[DONE]')]);
    await expect(hearth.complete({ model: 'm', messages: [] }, { signal: c.signal })).rejects.toBe(reason);
  });
});
