import { describe, expect, it } from 'vitest';
import { isIgnored, parseIgnoreRules } from '../../../src/apps/ignore-rules.ts';

describe('.gitignore-style excludes of `hearth apps deploy <dir>`', () => {
  const rules = parseIgnoreRules(
    ['# comment', '*.log', '/build', 'tmp/', 'docs/**/*.draft', '!keep.log', 'secret?.txt', ''].join('\n'),
  );
  const cases: Array<[string, boolean, boolean]> = [
    ['app.log', false, true],
    ['logs/app.log', false, true],
    ['keep.log', false, false], // negation: the last matching rule wins
    ['build', true, true],
    ['src/build', true, false], // a leading slash anchors to the packed directory
    ['tmp', true, true],
    ['tmp', false, false], // a trailing slash matches directories only
    ['src/tmp/x.js', false, true], // ... and everything under them
    ['docs/a/b/c.draft', false, true],
    ['docs/c.draft', false, true],
    ['secret1.txt', false, true],
    ['secret12.txt', false, false],
    ['src/index.js', false, false],
    ['node_modules', true, true], // always, whatever the rules say
    ['vendor/pkg/node_modules/x/index.js', false, true],
    ['.git', true, true],
  ];
  it.each(cases)('%s (directory: %s) -> ignored: %s', (p, dir, expected) => {
    expect(isIgnored(rules, p, dir)).toBe(expected);
  });

  it('never lets a negation bring node_modules back', () => {
    expect(isIgnored(parseIgnoreRules('!node_modules\n'), 'node_modules', true)).toBe(true);
  });
});
