import { describe, expect, it } from 'vitest';
import { readEvents, splitEvents } from '../../../web/src/sse.ts';

/** The dashboard's SSE reader (playground, app logs) against the chat-completions stream's framing. */
function streamOf(parts: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(enc.encode(p));
      c.close();
    },
  });
}

async function collect(parts: string[]) {
  const out = [];
  for await (const e of readEvents(streamOf(parts))) out.push(e);
  return out;
}

describe('SSE reader', () => {
  it('yields data events in order and stops at [DONE]', async () => {
    expect(
      await collect(['data: {"a":1}\n\n', 'data: {"a":2}\n\ndata: [DONE]\n\n', 'data: {"after":true}\n\n']),
    ).toEqual([{ kind: 'data', data: '{"a":1}' }, { kind: 'data', data: '{"a":2}' }, { kind: 'done' }]);
  });

  it('joins events split across chunks, even inside a multi-byte character', async () => {
    const bytes = new TextEncoder().encode('data: {"t":"é✓"}\n\n');
    const parts = [bytes.slice(0, 13), bytes.slice(13, 15), bytes.slice(15)];
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of parts) c.enqueue(p);
        c.close();
      },
    });
    const got = [];
    for await (const e of readEvents(stream)) got.push(e);
    expect(got).toEqual([{ kind: 'data', data: '{"t":"é✓"}' }]);
  });

  it('ignores keep-alive comments and handles CRLF framing', () => {
    expect(splitEvents(': keep-alive\n\n: keep-alive\r\n\r\ndata: x\r\n\r\ndata: y')).toEqual({
      events: [{ kind: 'data', data: 'x' }],
      rest: 'data: y',
    });
  });

  it('a last event without its blank line still counts at the end of the body', async () => {
    expect(await collect(['data: {"error":{"message":"boom"}}'])).toEqual([
      { kind: 'data', data: '{"error":{"message":"boom"}}' },
    ]);
  });

  it('joins multi-line data with newlines', () => {
    expect(splitEvents('data: a\ndata: b\n\n').events).toEqual([{ kind: 'data', data: 'a\nb' }]);
  });
});
