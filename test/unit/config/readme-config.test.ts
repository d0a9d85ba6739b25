import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVE_SETTINGS } from '../../../src/config/config-spec.ts';

describe('README configuration table', () => {
  const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../../README.md'), 'utf8');
  it.each(SERVE_SETTINGS.map((s) => [s.flag, s.env]))('documents %s / %s', (flag, env) => {
    expect(readme).toContain(`| \`${flag}\` | \`${env}\` |`);
  });
});
