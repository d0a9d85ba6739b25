import { ConfigError, parseSettings } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';

/** The data-dir option every record command takes (same default and variable as `serve`). */
export const DATA_DIR_SETTING: SettingSpec = { key: 'dataDir', flag: '--data-dir', env: 'HEARTH_DATA_DIR', type: 'string', default: './data', help: 'Directory of the LMDB records' };
export const JSON_SETTING: SettingSpec = { key: 'json', flag: '--json', env: 'HEARTH_CLI_JSON', type: 'bool', default: false, help: 'Print JSON instead of text' };

/** Splits positional arguments from `--flag value` options. */
export function splitArgs(argv: readonly string[], specs: readonly SettingSpec[]): { positional: string[]; options: Record<string, string | number | boolean | undefined> } {
  const positional: string[] = [];
  const flags: string[] = [];
  const boolFlags = new Set(specs.filter((s) => s.type === 'bool').map((s) => s.flag));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) {
      flags.push(a);
      if (!a.includes('=') && !boolFlags.has(a) && i + 1 < argv.length) flags.push(argv[++i]!);
    } else positional.push(a);
  }
  return { positional, options: parseSettings(flags, process.env, specs) };
}

export { ConfigError };
