import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVE_SETTINGS } from '../../../src/config/config-spec.ts';
import { configTables, readmeConfigTables } from '../../../src/config/readme-table.ts';

const read = (file: string) => fs.readFileSync(path.resolve(import.meta.dirname, '../../..', file), 'utf8');

describe('docs/configuration.md', () => {
  const doc = read('docs/configuration.md');
  it.each(SERVE_SETTINGS.map((s) => [s.flag, s.env]))('documents %s / %s', (flag, env) => {
    expect(doc).toContain(`| \`${flag}\` | \`${env}\` |`);
  });

  it('holds every table src/config/readme-table.ts prints from the settings table', () => {
    expect(doc).toContain(configTables());
  });
});

describe('README configuration tables', () => {
  it('hold the everyday table src/config/readme-table.ts prints from the settings table', () => {
    expect(read('README.md')).toContain(readmeConfigTables());
  });

  it('show the new names only, never a deprecated one', () => {
    const tables = configTables();
    const deprecated = SERVE_SETTINGS.flatMap((s) => ('deprecated' in s ? [s.deprecated.flag, s.deprecated.env] : []));
    expect(deprecated.length).toBeGreaterThan(0);
    for (const name of deprecated) expect(tables).not.toContain(`\`${name}\``);
  });
});
