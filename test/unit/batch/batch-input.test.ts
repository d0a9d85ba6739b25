import { describe, expect, it } from 'vitest';
import { checkInput } from '../../../src/batch/batch-input.ts';
import type { BatchLine } from '../../../src/batch/batch-records.ts';

/** checkInput: a JSONL input read chunk by chunk, each line checked as OpenAI's Batch API does, errors naming lines. */
const URL = '/v1/chat/completions';
const line = (id: string, over: Record<string, unknown> = {}) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: URL, body: { model: 'm' }, ...over });

async function check(text: string, chunk = 7, lineLimit = 1 << 20) {
  const bytes = Buffer.from(text);
  async function* chunks() {
    for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, i + chunk);
  }
  const lines: BatchLine[] = [];
  const result = await checkInput(chunks(), URL, lineLimit, async (g) => {
    lines.push(...g);
  });
  return { ...result, emitted: lines };
}

describe('checkInput', () => {
  it('emits every well-formed line in order, whatever the chunking; blank lines skipped', async () => {
    const text = `${line('a')}\n\n${line('b')}\r\n${line('c')}`;
    for (const chunk of [1, 3, 7, 1000]) {
      const r = await check(text, chunk);
      expect(r.errors).toEqual([]);
      expect(r.emitted.map((l) => [l.index, l.customId, l.body])).toEqual([
        [0, 'a', '{"model":"m"}'],
        [1, 'b', '{"model":"m"}'],
        [2, 'c', '{"model":"m"}'],
      ]);
    }
  });

  it('names each bad line (1-based) and emits nothing after the first', async () => {
    const text = [
      line('a'),
      '{nope',
      line('a'),
      line('d', { method: 'GET' }),
      line('e', { url: '/v1/embeddings' }),
      line('f', { body: [] }),
      '[1]',
      line(''),
      line('x\ud800'),
      line('deep').replace('"body":{', `"body":{"x":${'['.repeat(5000)}${']'.repeat(5000)},`),
    ].join('\n');
    const r = await check(text);
    expect(r.errors.map((e) => [e.line, e.param])).toEqual([
      [2, null],
      [3, 'custom_id'],
      [4, 'method'],
      [5, 'url'],
      [6, 'body'],
      [7, null],
      [8, 'custom_id'],
      [9, 'custom_id'], // a lone surrogate: stored, it would come back as another id
      [10, 'body'], // 5,000 levels: JSON.stringify of it overflowed the stack, and validation ran again without end
    ]);
    expect(r.errors.at(-1)!.code).toBe('json_too_deep');
  });

  it('refuses a line over the limit without holding it, and an empty file', async () => {
    const r = await check(`${line('a')}\n${'x'.repeat(500)}\n${line('c')}`, 16, 100);
    expect(r.errors).toEqual([expect.objectContaining({ line: 2, code: 'line_too_long' })]);
    expect((await check('\n\n')).errors).toEqual([expect.objectContaining({ code: 'empty_file' })]);
  });
});
