/**
 * The shape of one setting, declared once per setting in settings/ (joined in config-spec.ts as SERVE_SETTINGS):
 * the key, the flag, the HEARTH_* variable, the type, the default, the help text, the group and any deprecated
 * names. The `Config` type (config.ts), the parser, the YAML config file's keys (the flag without `--`), `--help` /
 * `--help-all`, `hearth config print` and the README's configuration table (readme-table.ts) all come from that list.
 */
export type SettingType = 'string' | 'int' | 'bool' | 'enum';
/** everyday: `--help`; tuning (engine and limits) and testing (test seams, upstream URLs): `--help-all` only. */
export type SettingGroup = 'everyday' | 'tuning' | 'testing';

export interface SettingSpec {
  key: string;
  flag: string;
  env: string;
  type: SettingType;
  values?: readonly string[];
  min?: number;
  max?: number;
  /** A value or a function of the machine (evaluated once at parse time). */
  default: string | number | boolean | undefined | (() => string | number | boolean | undefined);
  help: string;
  /** Secret values are never printed (help shows only whether one is set). */
  secret?: boolean;
  /** Which help lists it (serve settings; the record commands' options have none). */
  group?: SettingGroup;
  /** Former names, still accepted as flag, variable and file key with a warning that names the new one. */
  deprecated?: { flag: string; env: string };
  /** The README's wording where the machine-made one would mislead (a default that depends on the machine). */
  doc?: { type?: string; default?: string };
  /** The flag may be given several times (`--model`): every value is kept, in order (config.ts). */
  repeatable?: boolean;
}

/** The value type a setting parses to: int -> number, bool -> boolean, enum -> its values, string -> string. */
type SettingValue<S> = S extends { type: 'int' }
  ? number
  : S extends { type: 'bool' }
    ? boolean
    : S extends { type: 'enum'; values: readonly (infer V)[] }
      ? V
      : string;

/** The settings of a table by key, `| undefined` where the default is undefined. */
export type SettingsOf<T extends readonly SettingSpec[]> = {
  [S in T[number] as S['key']]: SettingValue<S> | (S extends { default: undefined } ? undefined : never);
};
