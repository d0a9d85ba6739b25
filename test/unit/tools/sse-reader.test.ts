import { describe, expect, it } from 'vitest';
import { SseReader } from '../../../examples/tool-server/sse-reader.ts';

describe('SseReader', () => {
  it('parses data events, skipping comments', () => {
    const r = new SseReader();
    expect(r.push(': keep-alive\n\ndata: {"a":1}\n\ndata: [DONE]\n\n').map((e) => e.data)).toEqual([
      '{"a":1}',
      '[DONE]',
    ]);
  });

  it('reassembles events split at any point, CRLF included', () => {
    const text = 'data: one\r\n\r\nevent: x\r\ndata: two\r\ndata: lines\r\n\r\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const r = new SseReader();
      const events = [...r.push(text.slice(0, cut)), ...r.push(text.slice(cut))];
      expect(events).toEqual([
        { event: 'message', data: 'one', id: undefined },
        { event: 'x', data: 'two\nlines', id: undefined },
      ]);
    }
  });

  it('handles bare CR line ends, a missing space after the colon, and ids', () => {
    const r = new SseReader();
    expect(r.push('id: 7\rdata:tight\r\r')).toEqual([]); // the last CR could still become CRLF
    expect(r.end()).toEqual([{ event: 'message', data: 'tight', id: '7' }]);
  });

  it('drops an event that never got its blank line', () => {
    const r = new SseReader();
    expect(r.push('data: partial\n')).toEqual([]);
    expect(r.end()).toEqual([]);
  });
});
