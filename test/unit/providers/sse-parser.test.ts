import { describe, expect, it } from 'vitest';
import { SseParser } from '../../../src/providers/sse-parser.ts';

const enc = (s: string) => new TextEncoder().encode(s);

describe('SseParser', () => {
  it('parses data events with LF framing and named events', () => {
    const p = new SseParser();
    expect(p.push('event: message_start\ndata: {"a":1}\n\ndata: [DONE]\n\n')).toEqual([
      { event: 'message_start', data: '{"a":1}' },
      { event: 'message', data: '[DONE]' },
    ]);
  });

  it("parses Gemini's CRLF framing, and bare CR", () => {
    expect(new SseParser().push('data: {"x":1}\r\n\r\ndata: {"y":2}\r\n\r\n')).toEqual([
      { event: 'message', data: '{"x":1}' },
      { event: 'message', data: '{"y":2}' },
    ]);
    expect(new SseParser().push('data: a\r\rdata: b\r\r')).toEqual([
      { event: 'message', data: 'a' },
      { event: 'message', data: 'b' },
    ]);
  });

  it('treats a CRLF split across two chunks as one line ending', () => {
    const p = new SseParser();
    expect(p.push('data: one\r')).toEqual([]);
    expect(p.push('\n\r')).toEqual([{ event: 'message', data: 'one' }]);
    expect(p.push('\ndata: two\r\n\r\n')).toEqual([{ event: 'message', data: 'two' }]);
  });

  it('joins multi-line data, ignores comments and unknown fields, strips one leading space only', () => {
    const p = new SseParser();
    expect(p.push(': keep-alive\n\nid: 7\nretry: 10\ndata:first\ndata:  second\n\n')).toEqual([
      { event: 'message', data: 'first\n second' },
    ]);
  });

  it('decodes UTF-8 split across chunks and drops a leading BOM', () => {
    const bytes = enc('\uFEFFdata: héllo → 世界\n\n');
    const p = new SseParser();
    const out = [];
    for (let i = 0; i < bytes.length; i++) out.push(...p.push(bytes.slice(i, i + 1)));
    expect(out).toEqual([{ event: 'message', data: 'héllo → 世界' }]);
  });

  it('resets the event type after each event and discards an unterminated event at end()', () => {
    const p = new SseParser();
    expect(p.push('event: ping\ndata: {}\n\ndata: plain\n\n').map((e) => e.event)).toEqual(['ping', 'message']);
    expect(p.push('data: incomplete')).toEqual([]);
    expect(p.end()).toEqual([]);
  });

  it('throws past the per-event cap', () => {
    const p = new SseParser(16);
    expect(() => p.push(`data: ${'x'.repeat(64)}`)).toThrow(RangeError);
  });
});
