import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/index.ts';
import { pageLimit } from '../../../src/http/list-view.ts';

describe('pageLimit', () => {
  it('reads decimal digits from 1 to the maximum, 20 when absent; anything else is a 400 naming limit', () => {
    const limit = (query: string) => pageLimit(new URLSearchParams(query), 100);
    expect(limit('')).toBe(20);
    expect(limit('limit=1')).toBe(1);
    expect(limit('limit=100')).toBe(100);
    for (const bad of ['0', '101', '0x2', '1e1', ' 2', '2.0', '-1', '', 'abc', '9'.repeat(20)]) {
      expect(() => limit(`limit=${encodeURIComponent(bad)}`), bad).toThrow(
        expect.objectContaining({ status: 400, param: 'limit' }) as ApiError,
      );
    }
  });
});
