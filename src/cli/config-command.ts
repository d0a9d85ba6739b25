import { ConfigError, loadServeConfig, type Config, type SettingSource } from '../config/config.ts';
import { SERVE_SETTINGS } from '../config/config-spec.ts';

const HELP = `Usage: hearth config print [--json] [--config FILE] [serve options...]

Prints the settings \`hearth serve\` would run with, given the same options, HEARTH_* variables and
config file: each setting's name (its flag without --, as in the config file), effective value and
source (default, file, env or flag). Secrets print as (set). --json prints an object keyed by name:
{ "port": { "value": 8080, "source": "default" }, ... }.`;

/** One effective setting as printed: a secret's value is `(set)`, an unset one's is undefined. */
export interface EffectiveSetting {
  name: string;
  value: string | number | boolean | undefined;
  source: SettingSource;
}

/** The effective serve settings, in table order, secrets redacted; also the deprecation warnings. */
export function effectiveSettings(argv: readonly string[], env: NodeJS.ProcessEnv): { settings: EffectiveSetting[]; warnings: string[] } {
  const { config, sources, warnings } = loadServeConfig(argv, env);
  const settings = SERVE_SETTINGS.map((spec) => {
    // Several models print as their sources, in order (`models:` / repeated --model).
    const value = spec.key === 'model' && config.models.length > 1 ? config.models.map((m) => m.source).join(' ') : (config[spec.key as keyof Config] as EffectiveSetting['value']);
    return { name: spec.flag.slice(2), value: 'secret' in spec && spec.secret && value !== undefined ? '(set)' : value, source: sources[spec.key as keyof Config] };
  });
  return { settings, warnings };
}

/** Aligned text: name, value (`(unset)` when none), source. */
export function formatSettings(settings: readonly EffectiveSetting[]): string {
  const shown = settings.map((s) => ({ ...s, text: s.value === undefined ? '(unset)' : String(s.value) }));
  const nameWidth = Math.max(...shown.map((s) => s.name.length));
  const valueWidth = Math.max(...shown.map((s) => s.text.length));
  return shown.map((s) => `${s.name.padEnd(nameWidth)}  ${s.text.padEnd(valueWidth)}  ${s.source}`).join('\n');
}

export async function configCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h' || rest.includes('--help')) {
    out(HELP);
    return sub ? 0 : 2;
  }
  if (sub !== 'print') throw new ConfigError(`unknown subcommand '${sub}' (npx hearth config --help)`);
  const json = rest.includes('--json');
  const { settings, warnings } = effectiveSettings(rest.filter((a) => a !== '--json'), process.env);
  for (const warning of warnings) process.stderr.write(`hearth config: ${warning}\n`);
  if (json) out(JSON.stringify(Object.fromEntries(settings.map((s) => [s.name, { value: s.value ?? null, source: s.source }]))));
  else out(formatSettings(settings));
  return 0;
}
