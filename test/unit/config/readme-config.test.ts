import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVE_SETTINGS } from '../../../src/config/config-spec.ts';
import { readmeConfigTables } from '../../../src/config/readme-table.ts';

describe('README configuration table', () => {
  const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../../README.md'), 'utf8');
  it.each(SERVE_SETTINGS.map((s) => [s.flag, s.env]))('documents %s / %s', (flag, env) => {
    expect(readme).toContain(`| \`${flag}\` | \`${env}\` |`);
  });
});

describe('README configuration tables', () => {
  it('are the ones src/config/readme-table.ts prints from the settings table', () => {
    const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../../README.md'), 'utf8');
    expect(readme).toContain(readmeConfigTables());
  });

  it('show the new names only, never a deprecated one', () => {
    const tables = readmeConfigTables();
    const deprecated = SERVE_SETTINGS.flatMap((s) => ('deprecated' in s ? [s.deprecated.flag, s.deprecated.env] : []));
    expect(deprecated.length).toBeGreaterThan(0);
    for (const name of deprecated) expect(tables).not.toContain(`\`${name}\``);
  });
});
