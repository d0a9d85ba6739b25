import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerationSink } from '../../../src/engine/generation.ts';
import { queueFull } from '../../../src/errors/index.ts';
import { respondToChat } from '../../../src/http/chat-responder.ts';
import { startHttpServer, type RunningHttpServer } from '../../../src/http/http-server.ts';
import type { Route } from '../../../src/http/router.ts';
import { silentLogger } from '../../../src/log/logger.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';

/**
 * The chat responder on a real uWS server with scripted generations: commit-late errors, keep-alive comments
 * while the first token is slow, an error after commit as one error event without [DONE].
 */
type Script = (sink: GenerationSink) => void;
const scripts = new Map<string, Script>();
let server: RunningHttpServer;

beforeAll(async () => {
  const route: Route = {
    method: 'POST',
    pattern: '/chat/:script',
    name: 'chat',
    handler: async (ex) => {
      const script = scripts.get(ex.params[0]!)!;
      await respondToChat(ex, { stream: true, includeUsage: false, model: 'local/x', keepAliveMs: 100, streamBufferLimit: 1 << 20, reportCachedTokens: true }, (sink) => {
        script(sink);
        return { cancel() {} };
      });
    },
  };
  server = await startHttpServer({ host: '127.0.0.1', port: 0, routes: [route], metrics: createMetrics({ defaultMetrics: false }), log: silentLogger });
});
afterAll(() => server?.close());

const call = (script: string) => fetch(`http://127.0.0.1:${server.port}/chat/${script}`, { method: 'POST', body: '{}' });
const done = { finishReason: 'stop' as const, promptTokens: 1, cachedTokens: 0, completionTokens: 1 };

describe('respondToChat (streaming)', () => {
  it('an error before the first token is a plain JSON error with its status', async () => {
    scripts.set('early-error', (sink) => setTimeout(() => sink.onError(queueFull(3)), 10));
    const r = await call('early-error');
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('3');
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('queue_full');
  });

  it('sends keep-alive comments while the first token is slow, then the stream', async () => {
    scripts.set('slow', (sink) => setTimeout(() => { sink.onText('hi'); sink.onDone(done); }, 450));
    const r = await call('slow');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const text = await r.text();
    expect(text.indexOf(': keep-alive')).toBeGreaterThanOrEqual(0);
    expect(text.indexOf(': keep-alive')).toBeLessThan(text.indexOf('"content":"hi"'));
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('an error after the stream started is one error event and no [DONE]', async () => {
    scripts.set('late-error', (sink) => { sink.onText('partial'); setTimeout(() => sink.onError(queueFull()), 20); });
    const r = await call('late-error');
    expect(r.status).toBe(200);
    const events = (await r.text()).split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toContain('"error"');
    expect(events.some((e) => e === 'data: [DONE]')).toBe(false);
    expect(JSON.parse(events[0]!.slice(6)).choices[0].delta.role).toBe('assistant');
  });
});
