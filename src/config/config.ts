import path from 'node:path';
import { readConfigFile } from './config-file.ts';
import { SERVE_SETTINGS, type ServeSettings, type SettingSpec } from './config-spec.ts';
import { ConfigError, convert, type SettingValue } from './setting-value.ts';
import { closestName } from './closest-name.ts';
import { MODEL_ID, type ModelEntry, parseModelArgument } from './model-entries.ts';

export { ConfigError };
export { settingsHelp } from './settings-help.ts';

/**
 * The validated configuration of `hearth serve`: the settings' types derived from SERVE_SETTINGS, with
 * `--gpu-layers` parsed to `'auto'` or a number of layers, `--cpu-kernels` checked, and paths made absolute. Frozen; built once by
 * `loadServeConfig`.
 */
export type Config = Omit<ServeSettings, 'gpuLayers' | 'cpuKernels'> & {
  gpuLayers: 'auto' | number;
  cpuKernels: CpuKernelsSetting;
  /** Every model to serve, in order (the first is the default one, loaded at start): `--model` given once or several times, or the config file's `models:`. */
  models: readonly ModelEntry[];
};

/** Where a setting's effective value came from; each one wins over those after it in `flag, env, file, default`. */
export type SettingSource = 'default' | 'file' | 'env' | 'flag';

/** A setting's text from the command line, with the flag as written (its name in error messages). */
interface FlagValue {
  raw: string;
  flag: string;
  /** A repeatable setting's every value, in order (`raw` is the first). */
  all: string[];
}

/** Splits `--flag value` / `--flag=value` arguments; unknown flags are an error; deprecated flags are warned about. */
function parseFlags(
  argv: readonly string[],
  specs: readonly SettingSpec[],
  warnings: string[] = [],
): Map<string, FlagValue> {
  const byFlag = new Map<string, SettingSpec>();
  for (const s of specs) {
    byFlag.set(s.flag, s);
    if (s.deprecated) byFlag.set(s.deprecated.flag, s);
  }
  const out = new Map<string, FlagValue>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = byFlag.get(flag);
    if (!spec) {
      const near = flag.startsWith('--') ? closestName(flag, byFlag.keys()) : undefined;
      throw new ConfigError(`unknown option '${flag}'${near ? `: did you mean ${near}?` : ''} (see --help)`);
    }
    let value: string | undefined = eq > 0 ? arg.slice(eq + 1) : undefined;
    if (value === undefined) {
      if (spec.type === 'bool' && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) value = 'true';
      else value = argv[++i];
    }
    if (value === undefined) throw new ConfigError(`option '${flag}' needs a value`);
    if (flag !== spec.flag) warnings.push(`${flag} is deprecated: use ${spec.flag}`);
    const previous = out.get(spec.key);
    if (spec.repeatable && previous) previous.all.push(value);
    else out.set(spec.key, { raw: value, flag, all: [value] });
  }
  return out;
}

/** Every setting's effective value, where it came from, and the name it was given by (for later error messages). */
export interface ResolvedSettings {
  values: Record<string, SettingValue | undefined>;
  sources: Record<string, SettingSource>;
  /** The flag, variable or `file: key` that set each value (the flag for a default). */
  names: Record<string, string>;
  /** One line per deprecated name used (flag, variable or file key), naming the new one. */
  warnings: string[];
  /** The config file read, if any (`--config` / HEARTH_CONFIG). */
  configFile: string | undefined;
  /** The models to serve when the specs have `--model`: its flags (each may carry options), else its variable, else the file's `models:` or `model:`, else the default. */
  models: ModelEntry[] | undefined;
}

/**
 * Flags win over HEARTH_* environment variables, which win over the YAML config file named by the setting
 * whose flag is `--config` (when the list has one), which wins over defaults. A deprecated variable counts when
 * the new one is unset. Fails with a ConfigError naming the flag, variable or file and key on the first bad value.
 */
export function resolveSettings(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  specs: readonly SettingSpec[],
  read?: (file: string) => string,
): ResolvedSettings {
  const warnings: string[] = [];
  const flags = parseFlags(argv, specs, warnings);
  const fromEnv = (spec: SettingSpec): { raw: string; name: string } | undefined => {
    const value = env[spec.env];
    if (value !== undefined && value !== '') return { raw: value, name: spec.env };
    const old = spec.deprecated ? env[spec.deprecated.env] : undefined;
    if (spec.deprecated && old !== undefined && old !== '') {
      warnings.push(`${spec.deprecated.env} is deprecated: use ${spec.env}`);
      return { raw: old, name: spec.deprecated.env };
    }
    return undefined;
  };
  const fileSpec = specs.find((s) => s.flag === '--config');
  const fileFlag = fileSpec && flags.get(fileSpec.key);
  const fileName = fileFlag?.raw ?? (fileSpec && fromEnv(fileSpec)?.raw);
  const file =
    fileSpec && fileName !== undefined
      ? readConfigFile(convert(fileSpec, fileName, fileFlag ? fileFlag.flag : fileSpec.env) as string, specs, read)
      : undefined;
  if (file) warnings.push(...file.warnings);
  const result: ResolvedSettings = {
    values: {},
    sources: {},
    names: {},
    warnings,
    configFile: file?.path,
    models: undefined,
  };
  for (const spec of specs) {
    const flag = flags.get(spec.key);
    const envValue = flag ? undefined : fromEnv(spec);
    const fileValue = file?.settings.get(spec.key);
    let value: SettingValue | undefined;
    let source: SettingSource;
    let name: string;
    if (flag) [value, source, name] = [convert(spec, flag.raw, flag.flag), 'flag', flag.flag];
    else if (envValue) [value, source, name] = [convert(spec, envValue.raw, envValue.name), 'env', envValue.name];
    else if (fileValue) [value, source, name] = [fileValue.value, 'file', fileValue.source];
    else
      [value, source, name] = [
        typeof spec.default === 'function' ? spec.default() : spec.default,
        'default',
        spec.flag,
      ];
    result.values[spec.key] = value;
    result.sources[spec.key] = source;
    result.names[spec.key] = name;
    if (spec.key === 'model') {
      if (flag) result.models = flag.all.map((raw) => parseModelArgument(raw, flag.flag));
      else if (envValue) result.models = [parseModelArgument(envValue.raw, envValue.name)];
      else if (file?.models)
        [result.models, result.sources[spec.key], result.names[spec.key], result.values[spec.key]] = [
          file.models.entries,
          'file',
          file.models.source,
          file.models.entries[0]!.source,
        ];
      else result.models = [parseModelArgument(String(value), name)];
      result.values[spec.key] = result.models[0]!.source; // `model` itself is the first model's source
    }
  }
  return result;
}

/** The effective values only (the record commands' options). */
export function parseSettings(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  specs: readonly SettingSpec[],
): Record<string, SettingValue | undefined> {
  return resolveSettings(argv, env, specs).values;
}

/** `hearth serve`'s configuration, where each setting came from, and the deprecation warnings to log at start. */
export interface LoadedConfig {
  config: Config;
  sources: Record<keyof Config, SettingSource>;
  warnings: string[];
  configFile: string | undefined;
}

export function loadServeConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  read?: (file: string) => string,
): LoadedConfig {
  const r = resolveSettings(argv, env, SERVE_SETTINGS, read);
  const s = r.values as unknown as ServeSettings;
  const config: Config = {
    ...s,
    models: [],
    gpuLayers: parseGpuLayers(String(s.gpuLayers), r.names['gpuLayers']!),
    cpuKernels: parseCpuKernelsMode(String(s.cpuKernels), r.names['cpuKernels']!),
    gpuBackend: s.gpuBackend === undefined ? undefined : path.resolve(s.gpuBackend),
    dataDir: path.resolve(s.dataDir),
    modelsDir: path.resolve(s.modelsDir),
    appDir: s.appDir === undefined ? undefined : path.resolve(s.appDir),
    configFile: s.configFile === undefined ? undefined : path.resolve(s.configFile),
  };
  if (config.modelId !== undefined && !MODEL_ID.test(config.modelId)) {
    throw new ConfigError(`${r.names['modelId']}: must look like <namespace>/<model_name>, got '${config.modelId}'`);
  }
  const models = r.models ?? [{ source: config.model }];
  if (config.modelId !== undefined) {
    if (models.length > 1)
      throw new ConfigError(
        `${r.names['modelId']}: names one model; with several, give each its id (--model SOURCE,id=NS/NAME)`,
      );
    models[0] = { ...models[0]!, id: models[0]!.id ?? config.modelId };
  }
  config.models = Object.freeze(
    models.map((m) => Object.freeze({ ...m, source: m.source.startsWith('hf:') ? m.source : path.resolve(m.source) })),
  );
  for (const key of ['openaiBaseUrl', 'anthropicBaseUrl', 'geminiBaseUrl', 'mistralBaseUrl', 'publicUrl'] as const) {
    const v = config[key];
    if (v !== undefined && !/^https?:\/\//.test(v))
      throw new ConfigError(`${key}: must be an http(s) URL, got '${v}' (${r.names[key]})`);
  }
  return {
    config: Object.freeze(config),
    sources: r.sources as Record<keyof Config, SettingSource>,
    warnings: r.warnings,
    configFile: r.configFile,
  };
}

/** The configuration alone (tests, and callers that log no warnings). */
export function parseServeConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Config {
  return loadServeConfig(argv, env).config;
}

/** `auto` or a whole number of layers, 0..100000. */
export function parseGpuLayers(raw: string, source: string): 'auto' | number {
  const v = raw.trim();
  if (v === 'auto') return 'auto';
  if (!/^\d{1,6}$/.test(v) || Number(v) > 100_000)
    throw new ConfigError(`${source}: expected auto or a number of layers 0..100000, got '${raw}'`);
  return Number(v);
}

/** `--cpu-kernels` (the engine's CpuKernelsMode). */
export type CpuKernelsSetting = 'auto' | 'prebuilt' | 'native' | `prebuilt:${string}`;

/**
 * `auto`, `prebuilt`, `native` or `prebuilt:VARIANT` (a name of node-llama-cpp's libggml-cpu-VARIANT.so: whether
 * that library is installed and runs on this CPU is known only when the engine loads it, which then says so).
 */
export function parseCpuKernelsMode(raw: string, source: string): CpuKernelsSetting {
  const v = raw.trim();
  if (v === 'auto' || v === 'prebuilt' || v === 'native') return v;
  if (/^prebuilt:[a-z0-9_]{1,32}$/.test(v)) return v as `prebuilt:${string}`;
  throw new ConfigError(
    `${source}: expected auto, prebuilt, native or prebuilt:VARIANT (a libggml-cpu-VARIANT.so of node-llama-cpp: x64, haswell, zen4...), got '${raw}'`,
  );
}
