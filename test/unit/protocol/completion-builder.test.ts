import { describe, expect, it } from 'vitest';
import { CompletionBuilder, makeUsage } from '../../../src/protocol/completion-builder.ts';
import { SSE_DONE, sseData } from '../../../src/protocol/sse.ts';

describe('CompletionBuilder and SSE framing', () => {
  const b = new CompletionBuilder('local/m', 'chatcmpl-test', 1700000000);

  it('renders a content event identical to the generic chunk path', () => {
    for (const text of ['hello', ' wörld ✓', 'line\nbreak "quoted" \\ back', '\u2028', '']) {
      expect(b.contentEvent(text)).toBe(sseData(b.chunk({ content: text }, null)));
    }
  });

  it('frames each event as one data line and a blank line', () => {
    const e = b.contentEvent('a\nb\r\nc');
    expect(e.startsWith('data: ')).toBe(true);
    expect(e.endsWith('\n\n')).toBe(true);
    expect(e.slice(0, -2)).not.toContain('\n');
    expect(JSON.parse(e.slice(6))).toMatchObject({
      object: 'chat.completion.chunk',
      choices: [{ delta: { content: 'a\nb\r\nc' } }],
    });
    expect(SSE_DONE).toBe('data: [DONE]\n\n');
  });

  it('starts with the assistant role and ends with finish and usage chunks', () => {
    expect(b.roleChunk().choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(b.finishChunk('length').choices[0]!.finish_reason).toBe('length');
    const u = b.usageChunk(makeUsage(3, 4, 1));
    expect(u.choices).toEqual([]);
    expect(u.usage).toEqual({
      prompt_tokens: 3,
      completion_tokens: 4,
      total_tokens: 7,
      prompt_tokens_details: { cached_tokens: 1 },
    });
  });

  it('builds a completion body', () => {
    const c = b.completion('hi', 'stop', makeUsage(1, 1));
    expect(c).toMatchObject({
      id: 'chatcmpl-test',
      object: 'chat.completion',
      created: 1700000000,
      model: 'local/m',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    });
  });
});
