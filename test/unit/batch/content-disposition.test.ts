import { describe, expect, it } from 'vitest';
import { contentDisposition } from '../../../src/batch/batch-routes.ts';

describe('contentDisposition', () => {
  it('is ASCII text for any stored name: controls and non-ASCII as _, the UTF-8 name in filename*', () => {
    expect(contentDisposition('input.jsonl')).toBe('attachment; filename="input.jsonl"');
    const hostile = contentDisposition('a\u0000b\u001b[31m"q"\\.jsonl');
    expect(hostile).toMatch(/^[\x20-\x7e]+$/);
    expect(hostile).toBe(`attachment; filename="a_b_[31m_q__.jsonl"; filename*=UTF-8''a_b_%5B31m%22q%22%5C.jsonl`);
    const unicode = contentDisposition('é☃ \ud800.jsonl');
    expect(unicode).toMatch(/^[\x20-\x7e]+$/);
    expect(decodeURIComponent(unicode.split("UTF-8''")[1]!)).toBe('é☃ \ufffd.jsonl');
  });
});
