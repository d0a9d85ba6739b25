import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueFull, storeUnavailable, upstreamDeadline } from '../../../src/errors/index.ts';
import {
  chatCompletionFormat,
  respondFromDeltas,
  respondToChat,
  respondWith,
} from '../../../src/inference/chat-responder.ts';
import type { RunningHttpServer } from '../../../src/http/http-server.ts';
import type { Route } from '../../../src/http/router.ts';
import type { ChatDelta, ChatDeltaSink } from '../../../src/protocol/chat-delta.ts';
import { tokenLogprob, wireLogprob } from '../../helpers/token-logprobs.ts';
import { startLoopbackServer } from '../../helpers/uws-routes.ts';

/**
 * The one chat responder on a real uWS server, fed by scripted producers: push-based (as the shared model's
 * engine feeds it) and pull-based (an async iterable, as upstream providers feed it). Commit-late errors,
 * keep-alive comments while the first delta is slow, an error after commit as one error event without [DONE],
 * tool-call and logprobs rendering in both the SSE and the JSON shape.
 */
type Script = (sink: ChatDeltaSink) => void;
const scripts = new Map<string, Script>();
const iterables = new Map<string, () => AsyncIterable<ChatDelta>>();
let cancelled = 0;
let server: RunningHttpServer;
/** Whether the last /settled answer's promise (what its end waits for) had settled when the end was sent. */
let settledBeforeEnd: boolean[] = [];

beforeAll(async () => {
  const options = (stream: boolean) => ({
    stream,
    includeUsage: true,
    model: 'local/x',
    keepAliveMs: 100,
    streamBufferLimit: 1 << 20,
  });
  const routes: Route[] = [
    {
      method: 'POST',
      pattern: '/push/:mode/:script',
      name: 'push',
      handler: async (ex) => {
        const script = scripts.get(ex.params[1]!)!;
        await respondToChat(ex, options(ex.params[0] === 'sse'), (sink) => {
          script(sink);
          return {
            cancel: () => {
              cancelled++;
            },
          };
        });
      },
    },
    {
      method: 'POST',
      pattern: '/pull/:mode/:script',
      name: 'pull',
      handler: async (ex) => {
        const open = iterables.get(ex.params[1]!)!;
        await respondFromDeltas(ex, options(ex.params[0] === 'sse'), () => open());
      },
    },
    {
      // A format whose end waits for a promise (as a stored response's commit): resolved, or rejected with store_unavailable.
      method: 'POST',
      pattern: '/settled/:mode/:outcome',
      name: 'settled',
      handler: async (ex) => {
        const format = chatCompletionFormat('local/x', false);
        let settled = false;
        const wait = () =>
          new Promise<void>((resolve, reject) =>
            setTimeout(() => {
              settled = true;
              if (ex.params[1] === 'ok') resolve();
              else reject(storeUnavailable());
            }, 50),
          );
        let pending: Promise<void> | undefined;
        const endAt = (done: boolean) => {
          if (done) settledBeforeEnd.push(settled);
        };
        await respondWith(
          ex,
          options(ex.params[0] === 'sse'),
          {
            ...format,
            body: () => {
              const b = format.body();
              pending = wait();
              return b;
            },
            streamEvent: (d) => {
              if (d.type === 'finish') pending = wait();
              return format.streamEvent(d);
            },
            settled: () => pending,
          },
          (sink) => {
            sink.push({ type: 'content', text: 'hi' });
            sink.push(finish);
            sink.push({ type: 'content', text: 'ghost' }); // after the finish: ignored while the end waits
            return { cancel: () => {} };
          },
        );
        endAt(true);
      },
    },
  ];
  server = await startLoopbackServer(routes);
});
afterAll(() => server?.close());

const call = (path: string) => fetch(`http://127.0.0.1:${server.port}${path}`, { method: 'POST', body: '{}' });
const finish: ChatDelta = {
  type: 'finish',
  reason: 'stop',
  usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0 },
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const events = (text: string) => text.split('\n\n').filter((e) => e.startsWith('data: '));
const chunks = (text: string) =>
  events(text)
    .filter((e) => e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice(6)));

describe('respondToChat (push-based, streaming)', () => {
  it('an error before the first delta is a plain JSON error with its status', async () => {
    scripts.set('early-error', (sink) => setTimeout(() => sink.fail(queueFull(3)), 10));
    const r = await call('/push/sse/early-error');
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('3');
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('queue_full');
  });

  it('sends keep-alive comments while the first delta is slow, then the stream', async () => {
    scripts.set('slow', (sink) =>
      setTimeout(() => {
        sink.push({ type: 'content', text: 'hi' });
        sink.push(finish);
      }, 450),
    );
    const r = await call('/push/sse/slow');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const text = await r.text();
    expect(text.indexOf(': keep-alive')).toBeGreaterThanOrEqual(0);
    expect(text.indexOf(': keep-alive')).toBeLessThan(text.indexOf('"content":"hi"'));
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('an error after the stream started is one error event and no [DONE]; later pushes are ignored', async () => {
    scripts.set('late-error', (sink) => {
      sink.push({ type: 'content', text: 'partial' });
      setTimeout(() => {
        sink.fail(queueFull());
        sink.push({ type: 'content', text: 'ghost' });
        sink.push(finish);
      }, 20);
    });
    const r = await call('/push/sse/late-error');
    expect(r.status).toBe(200);
    const text = await r.text();
    const all = events(text);
    expect(all.at(-1)).toContain('"error"');
    expect(all.some((e) => e === 'data: [DONE]')).toBe(false);
    expect(text).not.toContain('ghost');
    expect(JSON.parse(all[0]!.slice(6)).choices[0].delta.role).toBe('assistant');
  });

  it("stays in flight until a slow reader's stream end is written, so shutdown does not cut it", async () => {
    // 16 MiB of text: more than the socket buffers take (loopback autotunes them to a few MiB) while the client
    // reads nothing, so the writer waits for uWS to drain; the next delta and the end, pushed later, wait in its
    // queue after `finish`. The client is a raw socket left unread (fetch's client may read ahead on its own).
    const big = 'x'.repeat(16 << 20);
    scripts.set('slow-reader', (sink) =>
      setTimeout(() => {
        sink.push({ type: 'content', text: big });
        setTimeout(() => {
          sink.push({ type: 'content', text: 'end' });
          sink.push(finish);
        }, 50);
      }, 10),
    );
    const socket = net.connect(server.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.write('POST /push/sse/slow-reader HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
    await sleep(300);
    expect(server.inFlight()).toBe(1);
    const parts: Buffer[] = [];
    socket.on('data', (b: Buffer) => parts.push(b));
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const raw = Buffer.concat(parts).toString('utf8');
    expect(raw.startsWith('HTTP/1.1 200')).toBe(true);
    const body = dechunk(
      raw.slice(raw.indexOf('\r\n\r\n') + 4),
      /transfer-encoding: chunked/i.test(raw.slice(0, raw.indexOf('\r\n\r\n'))),
    );
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(
      chunks(body)
        .map((c) => c.choices?.[0]?.delta?.content ?? '')
        .join(''),
    ).toBe(`${big}end`);
    for (let i = 0; i < 100 && server.inFlight() > 0; i++) await sleep(10);
    expect(server.inFlight()).toBe(0);
  });

  it('streams tool calls exactly as OpenAI does, then finish_reason tool_calls and usage', async () => {
    scripts.set('tools', (sink) => {
      sink.push({ type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', arguments: '' });
      sink.push({ type: 'tool_call', index: 0, arguments: '{"city":' });
      sink.push({ type: 'tool_call', index: 0, arguments: '"Paris"}' });
      sink.push({ type: 'tool_call', index: 1, id: 'call_2', name: 'get_time', arguments: '{}' });
      sink.push({ type: 'finish', reason: 'tool_calls', usage: { promptTokens: 5, completionTokens: 7 } });
    });
    const r = await call('/push/sse/tools');
    const got = chunks(await r.text());
    expect(got[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(got.slice(1, 5).map((c) => c.choices[0].delta)).toEqual([
      { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] },
      { tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
    ]);
    expect(got[5].choices[0].finish_reason).toBe('tool_calls');
    expect(got[6]).toMatchObject({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } });
    expect(got[6].usage.prompt_tokens_details).toBeUndefined();
  });

  it('puts logprobs on content chunks in the OpenAI shape', async () => {
    const lp = tokenLogprob('hi', -0.5, [
      ['hi', -0.5],
      ['yo', -1.5],
    ]);
    scripts.set('logprobs', (sink) => {
      sink.push({ type: 'content', text: 'hi', logprobs: [lp] });
      sink.push(finish);
    });
    const got = chunks(await (await call('/push/sse/logprobs')).text());
    expect(got[1].choices[0]).toEqual({
      index: 0,
      delta: { content: 'hi' },
      logprobs: {
        content: [wireLogprob(lp)],
        refusal: null,
      },
      finish_reason: null,
    });
  });
});

describe('respondToChat (push-based, JSON)', () => {
  it('aggregates tool-call fragments into message.tool_calls with content null', async () => {
    scripts.set('json-tools', (sink) => {
      sink.push({ type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":' });
      sink.push({ type: 'tool_call', index: 0, arguments: '"Paris"}' });
      sink.push({
        type: 'finish',
        reason: 'tool_calls',
        usage: { promptTokens: 2, completionTokens: 3, cachedTokens: 1 },
      });
    });
    const body = (await (await call('/push/json/json-tools')).json()) as Record<string, any>;
    expect(body.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    });
    expect(body.usage).toEqual({
      prompt_tokens: 2,
      completion_tokens: 3,
      total_tokens: 5,
      prompt_tokens_details: { cached_tokens: 1 },
    });
  });

  it('aggregates text and logprobs', async () => {
    const lp = (token: string) => ({ token, logprob: -1, bytes: [...Buffer.from(token)], top: [] });
    scripts.set('json-text', (sink) => {
      sink.push({ type: 'content', text: 'a', logprobs: [lp('a')] });
      sink.push({ type: 'content', text: 'b', logprobs: [lp('b')] });
      sink.push(finish);
    });
    const body = (await (await call('/push/json/json-text')).json()) as Record<string, any>;
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: 'ab', refusal: null });
    expect(body.choices[0].logprobs.content.map((c: { token: string }) => c.token)).toEqual(['a', 'b']);
  });
});

describe('respondFromDeltas (pull-based, as upstream providers feed it)', () => {
  it('a failure before the first delta is a JSON error with its real status (504 from a deadline)', async () => {
    iterables.set('deadline-early', async function* () {
      await sleep(10);
      throw upstreamDeadline('openai', 1000);
    });
    for (const mode of ['sse', 'json']) {
      const r = await call(`/pull/${mode}/deadline-early`);
      expect(r.status).toBe(504);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('deadline_exceeded');
    }
  });

  it('a failure after commit is one error event and no [DONE]', async () => {
    iterables.set('deadline-late', async function* () {
      yield { type: 'content', text: 'so far' } as ChatDelta;
      await sleep(20);
      throw upstreamDeadline('openai', 1000);
    });
    const r = await call('/pull/sse/deadline-late');
    expect(r.status).toBe(200);
    const all = events(await r.text());
    expect(all.at(-1)).toContain('"deadline_exceeded"');
    expect(all).not.toContain('data: [DONE]');
  });

  it('an iterable that ends without a finish is a 502 stream_interrupted', async () => {
    iterables.set('no-finish', async function* () {
      await sleep(5);
      yield* [];
    });
    const r = await call('/pull/json/no-finish');
    expect(r.status).toBe(502);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('stream_interrupted');
  });

  it('stops pulling once the client has gone', async () => {
    let pulled = 0;
    let stopped = false;
    iterables.set('endless', async function* () {
      try {
        for (;;) {
          pulled++;
          yield { type: 'content', text: 'x' } as ChatDelta;
          await sleep(5);
        }
      } finally {
        stopped = true;
      }
    });
    const controller = new AbortController();
    const r = await fetch(`http://127.0.0.1:${server.port}/pull/sse/endless`, {
      method: 'POST',
      body: '{}',
      signal: controller.signal,
    });
    const reader = r.body!.getReader();
    await reader.read();
    controller.abort();
    for (let i = 0; i < 200 && !stopped; i++) await sleep(10);
    expect(stopped).toBe(true);
    const at = pulled;
    await sleep(50);
    expect(pulled).toBe(at);
  });
});

describe('respondToChat cancels the producer', () => {
  it('when the client disconnects mid-stream', async () => {
    const before = cancelled;
    scripts.set('never-ends', (sink) => sink.push({ type: 'content', text: 'x' }));
    const controller = new AbortController();
    const r = await fetch(`http://127.0.0.1:${server.port}/push/sse/never-ends`, {
      method: 'POST',
      body: '{}',
      signal: controller.signal,
    });
    await r.body!.getReader().read();
    controller.abort();
    for (let i = 0; i < 200 && cancelled === before; i++) await sleep(10);
    expect(cancelled).toBe(before + 1);
  });
});

describe('respondWith: an end that waits for the format (a stored response committed first)', () => {
  it('JSON: the answer is sent once the promise resolved; its rejection is the JSON error instead', async () => {
    settledBeforeEnd = [];
    const ok = await call('/settled/json/ok');
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe(
      'hi',
    );
    const failed = await call('/settled/json/fail');
    expect(failed.status).toBe(503);
    expect(failed.headers.get('retry-after')).toBe('5');
    expect(((await failed.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
    expect(settledBeforeEnd).toEqual([true, true]);
  });

  it('SSE: the last event goes out once the promise resolved; its rejection ends the stream with the error event, no [DONE]', async () => {
    settledBeforeEnd = [];
    const ok = await (await call('/settled/sse/ok')).text();
    expect(ok.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(ok).not.toContain('ghost');
    const failed = await (await call('/settled/sse/fail')).text();
    expect(failed).toContain('"code":"store_unavailable"');
    expect(failed).not.toContain('[DONE]');
    expect(failed).not.toContain('"finish_reason":"stop"');
    expect(settledBeforeEnd).toEqual([true, true]);
  });
});

/** An HTTP/1.1 body as sent: chunked transfer coding undone when `chunked`. */
function dechunk(text: string, chunked: boolean): string {
  if (!chunked) return text;
  let out = '';
  let at = 0;
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    const size = Number.parseInt(text.slice(at, eol), 16);
    if (!(size > 0)) return out;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}
