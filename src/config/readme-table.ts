import { SERVE_SETTINGS, type SettingSpec } from './config-spec.ts';
import { SETTING_GROUPS } from './settings-help.ts';

/**
 * The README's configuration tables, one per setting group, made from SERVE_SETTINGS (new names only).
 * `node --import tsx src/config/readme-table.ts` prints them; test/unit/config/readme-config.test.ts checks that
 * README.md holds exactly this text.
 */
export function readmeConfigTables(specs: readonly SettingSpec[] = SERVE_SETTINGS): string {
  return SETTING_GROUPS.map(({ group, title }) => {
    const rows = specs.filter((s) => (s.group ?? 'everyday') === group).map(row);
    const heading = group === 'everyday' ? 'Everyday settings (`hearth serve --help`)' : title.replace('(--help-all)', '(`hearth serve --help-all`)');
    return [`${heading}:`, '', '| flag | variable | type | default | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
  }).join('\n\n');
}

function row(s: SettingSpec): string {
  const type = s.doc?.type ?? (s.values ? s.values.map((v) => `\`${v}\``).join(' / ') : s.type);
  const def = s.doc?.default ?? (typeof s.default === 'function' ? '(machine)' : s.default === undefined ? '(unset)' : `\`${String(s.default)}\``);
  return `| \`${s.flag}\` | \`${s.env}\` | ${type} | ${def} | ${s.help.replaceAll('|', '\\|')} |`;
}

if (process.argv[1]?.endsWith('readme-table.ts')) process.stdout.write(`${readmeConfigTables()}\n`);
