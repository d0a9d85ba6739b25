import { describe, expect, it } from 'vitest';
import { terminalSafe } from '../../../src/cli/terminal-text.ts';

describe('terminalSafe', () => {
  it("writes control and bidi-override characters as \\uXXXX; keeps tab, newline and everyone's letters", () => {
    expect(terminalSafe('\u0000\u001b[31mred\u001b]0;title\u0007')).toBe('\\u0000\\u001b[31mred\\u001b]0;title\\u0007');
    expect(terminalSafe('ok\rhidden')).toBe('ok\\u000dhidden');
    expect(terminalSafe('evil\u202egnp.exe \u2066x\u2069 \u009b')).toBe('evil\\u202egnp.exe \\u2066x\\u2069 \\u009b');
    const plain = 'key\tname\nשלום 日本語 😀 äda@x.io';
    expect(terminalSafe(plain)).toBe(plain);
  });

  it('leaves --json output the same JSON value', () => {
    const value = { name: '\u001b[2J\u202e\u0085 x', n: 1 };
    expect(JSON.parse(terminalSafe(JSON.stringify(value)))).toEqual(value);
  });
});
