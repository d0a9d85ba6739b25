import { ConfigError, parseSettings } from '../config/config.ts';
import type { SettingSpec } from '../config/config-spec.ts';

/** The data-dir option every record command takes (same default and variable as `serve`). */
export const DATA_DIR_SETTING: SettingSpec = {
  key: 'dataDir',
  flag: '--data-dir',
  env: 'HEARTH_DATA_DIR',
  type: 'string',
  default: './data',
  help: 'Directory of the LMDB records',
};
/** The database-url option every record command takes (as `serve`): when set, the records are in PostgreSQL. */
export const DATABASE_URL_SETTING: SettingSpec = {
  key: 'databaseUrl',
  flag: '--database-url',
  env: 'HEARTH_DATABASE_URL',
  type: 'string',
  default: undefined,
  secret: true,
  help: 'PostgreSQL URL of the records (instead of LMDB in --data-dir), as the server uses',
};
/** Where a record command finds the records: --data-dir, or --database-url when set. */
export const RECORDS_SETTINGS: SettingSpec[] = [DATA_DIR_SETTING, DATABASE_URL_SETTING];
export const JSON_SETTING: SettingSpec = {
  key: 'json',
  flag: '--json',
  env: 'HEARTH_CLI_JSON',
  type: 'bool',
  default: false,
  help: 'Print JSON instead of text',
};

/** Splits positional arguments from `--flag value` options. */
export function splitArgs(
  argv: readonly string[],
  specs: readonly SettingSpec[],
): { positional: string[]; options: Options } {
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

export type Options = Record<string, string | number | boolean | undefined>;

/** A record command's arguments after `hearth <noun>`: the action, the rest split, and a printer honouring --json. */
export interface CommandArgs {
  action: string;
  positional: string[];
  options: Options;
  json: boolean;
  /** Prints `value` as JSON under --json, else as `text(value)`. */
  print<T>(value: T, text: (v: T) => string): void;
}

/**
 * Reads `hearth <noun> <action> [args] [options]`. With no action, or with -h/--help, prints `help` and
 * returns the exit code (0 when asked for, 2 when the action is missing) instead of the arguments.
 */
export function commandArgs(
  argv: readonly string[],
  specs: readonly SettingSpec[],
  help: string,
  out: (s: string) => void,
): CommandArgs | number {
  const [action, ...rest] = argv;
  if (!action || action === '--help' || action === '-h' || rest.includes('--help')) {
    out(help);
    return action ? 0 : 2;
  }
  const { positional, options } = splitArgs(rest, specs);
  const json = options.json === true;
  return { action, positional, options, json, print: (value, text) => out(json ? JSON.stringify(value) : text(value)) };
}

export { ConfigError };
