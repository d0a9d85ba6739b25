import { SERVE_SETTINGS, type SettingSpec } from './config-spec.ts';
import { SETTING_GROUPS } from './settings-help.ts';

/**
 * The configuration tables, one per setting group, made from SERVE_SETTINGS (new names only): README.md holds the
 * everyday one (`readmeConfigTables()`), docs/configuration.md all of them (`configTables()`).
 * `node --import tsx src/config/readme-table.ts [--all]` prints them; test/unit/config/readme-config.test.ts checks
 * that both files hold exactly this text.
 */
export function readmeConfigTables(specs: readonly SettingSpec[] = SERVE_SETTINGS): string {
  return configTables(specs, ['everyday']);
}

export function configTables(
  specs: readonly SettingSpec[] = SERVE_SETTINGS,
  groups: readonly string[] = SETTING_GROUPS.map((g) => g.group),
): string {
  return SETTING_GROUPS.filter(({ group }) => groups.includes(group))
    .map(({ group, title }) => {
      const rows = specs.filter((s) => (s.group ?? 'everyday') === group).map(row);
      const heading =
        group === 'everyday'
          ? 'Everyday settings (`hearth serve --help`)'
          : title.replace('(--help-all)', '(`hearth serve --help-all`)');
      return [
        `${heading}:`,
        '',
        '| flag | variable | type | default | meaning |',
        '|---|---|---|---|---|',
        ...rows,
      ].join('\n');
    })
    .join('\n\n');
}

function row(s: SettingSpec): string {
  const type = s.doc?.type ?? (s.values ? s.values.map((v) => `\`${v}\``).join(' / ') : s.type);
  const def =
    s.doc?.default ??
    (typeof s.default === 'function' ? '(machine)' : s.default === undefined ? '(unset)' : `\`${String(s.default)}\``);
  return `| \`${s.flag}\` | \`${s.env}\` | ${type} | ${def} | ${s.help.replaceAll('|', '\\|')} |`;
}

if (process.argv[1]?.endsWith('readme-table.ts'))
  process.stdout.write(`${process.argv.includes('--all') ? configTables() : readmeConfigTables()}\n`);
