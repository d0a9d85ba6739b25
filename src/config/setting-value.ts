import type { SettingSpec } from './config-spec.ts';

/** A setting that cannot be used: the message names where it came from (flag, variable, or file and key). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type SettingValue = string | number | boolean;

/** Converts a flag's or a variable's text to the setting's type, or throws a ConfigError naming `source`. */
export function convert(spec: SettingSpec, raw: string, source: string): SettingValue {
  switch (spec.type) {
    case 'int': {
      if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${source}: expected an integer, got '${raw}'`);
      const n = Number(raw);
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
        throw new ConfigError(`${source}: ${n} is out of range ${spec.min ?? '-inf'}..${spec.max ?? 'inf'}`);
      }
      return n;
    }
    case 'bool':
      if (['1', 'true', 'yes', 'on', ''].includes(raw.toLowerCase())) return true;
      if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
      throw new ConfigError(`${source}: expected true or false, got '${raw}'`);
    case 'enum':
      if (!spec.values?.includes(raw))
        throw new ConfigError(`${source}: must be one of ${spec.values?.join(', ')}, got '${raw}'`);
      return raw;
    case 'string':
      if (raw.length === 0) throw new ConfigError(`${source}: must not be empty`);
      return raw;
  }
}

/**
 * Converts a value read from the YAML config file: its YAML type must be the setting's (an int setting takes a
 * YAML integer, a bool one true or false, a string or enum one a string; a string setting also takes a whole
 * number, as `gpu-layers: 12`), then the same checks as a flag's text apply.
 */
export function convertFileValue(spec: SettingSpec, value: unknown, source: string): SettingValue {
  const expected = { int: 'an integer', bool: 'true or false', enum: 'a string', string: 'a string' }[spec.type];
  const fits =
    spec.type === 'int'
      ? typeof value === 'number' && Number.isInteger(value)
      : spec.type === 'bool'
        ? typeof value === 'boolean'
        : spec.type === 'string'
          ? typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value))
          : typeof value === 'string';
  if (!fits) throw new ConfigError(`${source}: expected ${expected}, got ${describe(value)}`);
  return convert(spec, String(value), source);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'no value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}
