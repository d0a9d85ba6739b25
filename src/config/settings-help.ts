import type { SettingGroup, SettingSpec } from './config-spec.ts';

/** `--help` lines for a list of settings: flag and type, help, default (never a secret's), variable. */
export function settingsHelp(specs: readonly SettingSpec[]): string {
  return specs
    .map((s) => {
      // A default computed from the machine prints as the README words it; an unset one is described by its help.
      const value = typeof s.default === 'function' ? (s.doc?.default?.replaceAll('`', '') ?? s.default()) : s.default;
      const def = s.secret || value === undefined ? '' : ` (default: ${String(value)})`;
      return `  ${`${s.flag} <${s.values ? s.values.join('|') : s.type}>`.padEnd(44)} ${s.help}${def}  [${s.env}]`;
    })
    .join('\n');
}

/** The groups in the order help and the README list them, with their headings. */
export const SETTING_GROUPS: readonly { group: SettingGroup; title: string }[] = [
  { group: 'everyday', title: 'Settings' },
  { group: 'tuning', title: 'Tuning: the engine and limits (--help-all)' },
  { group: 'testing', title: 'Test seams and upstream URLs (--help-all)' },
];

/** The settings help of a command whose settings have groups: the everyday ones, or (`all`) every group. */
export function groupedSettingsHelp(specs: readonly SettingSpec[], all: boolean): string {
  const sections = SETTING_GROUPS.filter((g) => all || g.group === 'everyday').map(
    (g) => `${g.title}:\n${settingsHelp(specs.filter((s) => (s.group ?? 'everyday') === g.group))}`,
  );
  const hidden = specs.filter((s) => (s.group ?? 'everyday') !== 'everyday').length;
  if (!all && hidden > 0)
    sections.push(`${hidden} more settings tune the engine and limits or serve tests: --help-all lists them.`);
  return sections.join('\n\n');
}
