import fs from 'node:fs';
import { parseDocument } from 'yaml';
import type { SettingSpec } from './config-spec.ts';
import { type ModelEntry, parseModelList } from './model-entries.ts';
import { ConfigError, convertFileValue, type SettingValue } from './setting-value.ts';

/** One setting read from the config file, already converted; `source` names the file and the key as written. */
export interface FileSetting {
  value: SettingValue;
  source: string;
}

/** The settings a YAML config file sets, by setting key, and the warnings for deprecated keys it uses. */
export interface ConfigFile {
  path: string;
  settings: Map<string, FileSetting>;
  warnings: string[];
  /** The `models:` list (several models; model-entries.ts), if the file has one. */
  models?: { entries: ModelEntry[]; source: string };
}

/**
 * Reads `hearth serve --config FILE`: a YAML mapping whose keys are the settings' flag names without the leading
 * `--` (`body-limit-bytes: 2097152`); a deprecated flag name is taken with a warning. An unreadable file, invalid
 * YAML, anything but a mapping, an unknown key, the file naming itself (`config`) or a value of the wrong type is
 * a ConfigError that names the file (and the key).
 */
export function readConfigFile(
  file: string,
  specs: readonly SettingSpec[],
  read: (file: string) => string = (f) => fs.readFileSync(f, 'utf8'),
): ConfigFile {
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `${file}: cannot read the config file (${code ?? (err instanceof Error ? err.message : String(err))})`,
    );
  }
  const doc = parseDocument(text);
  const yamlError = doc.errors[0];
  if (yamlError) throw new ConfigError(`${file}: invalid YAML: ${yamlError.message.split('\n')[0]}`);
  const data: unknown = doc.toJS();
  const settings = new Map<string, FileSetting>();
  const warnings: string[] = [];
  if (data === null || data === undefined) return { path: file, settings, warnings };
  if (typeof data !== 'object' || Array.isArray(data))
    throw new ConfigError(
      `${file}: expected a mapping of settings (flag names without --), got ${Array.isArray(data) ? 'a list' : typeof data}`,
    );
  const byName = new Map<string, { spec: SettingSpec; deprecated: boolean }>();
  for (const spec of specs) {
    byName.set(spec.flag.slice(2), { spec, deprecated: false });
    if (spec.deprecated) byName.set(spec.deprecated.flag.slice(2), { spec, deprecated: true });
  }
  let models: ConfigFile['models'];
  for (const [name, value] of Object.entries(data as Record<string, unknown>)) {
    if (name === 'models') {
      models = { entries: parseModelList(value, `${file}: models`), source: `${file}: models` };
      continue;
    }
    const found = byName.get(name);
    if (!found)
      throw new ConfigError(
        `${file}: unknown setting '${name}' (keys are the flag names without --; see npx hearth serve --help-all)`,
      );
    if (found.spec.flag === '--config') throw new ConfigError(`${file}: '${name}' cannot be set in a config file`);
    const source = `${file}: ${name}`;
    if (found.deprecated) warnings.push(`${source} is deprecated: use ${found.spec.flag.slice(2)}`);
    const previous = settings.get(found.spec.key);
    if (previous) throw new ConfigError(`${source}: set twice (also as ${previous.source.slice(file.length + 2)})`);
    settings.set(found.spec.key, { value: convertFileValue(found.spec, value, source), source });
  }
  if (models && settings.has('model'))
    throw new ConfigError(`${file}: 'model' and 'models' are both set: list every model under models:`);
  return { path: file, settings, warnings, ...(models ? { models } : {}) };
}
