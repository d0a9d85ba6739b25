import { describe, expect, it } from 'vitest';
import { BearerAuth } from '../../../src/tools/bearer-auth.ts';

describe('BearerAuth', () => {
  const auth = new BearerAuth('s3cret-key');

  it('accepts exactly the configured key, any scheme case, surrounding blanks', () => {
    expect(auth.accepts('Bearer s3cret-key')).toBe(true);
    expect(auth.accepts('bearer s3cret-key')).toBe(true);
    expect(auth.accepts('Bearer   s3cret-key ')).toBe(true);
  });

  it('refuses anything else', () => {
    const wrongKey = ['Bearer s3cret-ke', 'Bearer s3cret-key2', 'Bearer s3cret-key extra'];
    const malformed = ['', 'Bearer', 'Bearer ', 's3cret-key', 'Basic s3cret-key'];
    for (const h of [...malformed, ...wrongKey]) expect(auth.accepts(h), h).toBe(false);
  });

  it('null key: open; empty or blank-containing key: refused at construction', () => {
    expect(new BearerAuth(null).accepts('')).toBe(true);
    expect(new BearerAuth(null).enabled).toBe(false);
    expect(() => new BearerAuth('')).toThrow(TypeError);
    expect(() => new BearerAuth('a b')).toThrow(TypeError);
  });
});
