import path from 'node:path';
import { SERVE_SETTINGS, type SettingSpec } from './config-spec.ts';
import type { NativeTuning } from '../../native/generation-job.ts';

/** The validated configuration of `hearth serve`. Frozen; built once by `parseServeConfig`. */
/** The native tuning fields are NativeTuning's (their `promptCacheMiB` undefined: defaultPromptCacheMiB, resolved by main.ts). */
export interface Config extends Omit<NativeTuning, 'promptCacheMiB'> {
  port: number;
  host: string;
  publicUrl: string | undefined;
  dataDir: string;
  model: string;
  modelId: string | undefined;
  modelsDir: string;
  engine: 'auto' | 'native' | 'node-llama-cpp' | 'instant';
  workers: number;
  /** Undefined: 8, or 64 when the native loop runs on a GPU (engine/local-engine.ts). */
  slots: number | undefined;
  /** 0 = choose from the core count (see engine/thread-plan.ts). */
  threads: number;
  contextSize: number;
  batchSize: number;
  /** Native engine: which ggml CPU kernels (engine/cpu-kernels.ts). */
  cpuKernels: 'auto' | 'prebuilt' | 'native';
  /** Native engine: layers offloaded to a GPU ('auto' = all on the first usable GPU, else CPU; 0 = CPU). */
  gpuLayers: 'auto' | number;
  /** Native engine: the ggml CUDA backend library (undefined: found, engine/gpu-offload.ts). */
  gpuBackend: string | undefined;
  /** Native engine: MiB of KV state per model worker kept in host memory for prompts no slot holds (0 = none; undefined = defaultPromptCacheMiB). */
  promptCacheMiB: number | undefined;
  /** Who shares prompt-cache state (gateway/prompt-cache-scope.ts). */
  promptCacheScope: 'account' | 'key' | 'global';
  maxTokens: number;
  bodyLimit: number;
  queueLimit: number;
  streamBufferLimit: number;
  keepAliveMs: number;
  metricsToken: string | undefined;
  secretKey: string | undefined;
  /** Dashboard session idle and absolute lifetimes, ms. */
  sessionIdleMs: number;
  sessionMaxAgeMs: number;
  responsesTtlDays: number;
  /** Whether X-Forwarded-For names the client (sign-in limits per address). */
  trustProxy: boolean;
  /** What parses HTTP on the public socket (http-server.ts FrontMode). */
  front: 'auto' | 'haproxy' | 'off';
  /** Delay of Yam / project provisioning, ms (gateway/provisioner.ts). */
  provisionDelayMs: number;
  appSandbox: 'bwrap' | 'none';
  appBwrap: string;
  /** Undefined = <dataDir>/apps. */
  appDir: string | undefined;
  appArchiveLimit: number;
  appMaxFiles: number;
  appMaxUnpackedBytes: number;
  /** Seconds. */
  appStartTimeout: number;
  appBuildTimeout: number;
  appGracePeriod: number;
  /** MiB. */
  appMemoryLimit: number;
  appMaxProcesses: number;
  appMaxOpenFiles: number;
  appProxyTimeout: number;
  appProxyBodyLimit: number;
  /** Which repositories app deployments may fetch (apps/repository-policy.ts). */
  appRepositories: 'public' | 'network' | 'local';
  providerTimeoutMs: number;
  /** Deadline of one upstream call's whole answer, ms (providers/upstream-call.ts). */
  providerDeadlineMs: number;
  providerMaxRetries: number;
  openaiBaseUrl: string;
  anthropicBaseUrl: string;
  geminiBaseUrl: string;
  mistralBaseUrl: string;
  pullStallTimeoutMs: number;
  shutdownGraceMs: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  defaultCores: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function convert(spec: SettingSpec, raw: string, source: string): string | number | boolean {
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
      if (!spec.values?.includes(raw)) throw new ConfigError(`${source}: must be one of ${spec.values?.join(', ')}, got '${raw}'`);
      return raw;
    case 'string':
      if (raw.length === 0) throw new ConfigError(`${source}: must not be empty`);
      return raw;
  }
}

/** Splits `--flag value` / `--flag=value` arguments; unknown flags are an error. */
export function parseFlags(argv: readonly string[], specs: readonly SettingSpec[]): Map<string, string> {
  const byFlag = new Map(specs.map((s) => [s.flag, s]));
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const spec = byFlag.get(flag);
    if (!spec) throw new ConfigError(`unknown option '${flag}' (see --help)`);
    let value: string | undefined = eq > 0 ? arg.slice(eq + 1) : undefined;
    if (value === undefined) {
      if (spec.type === 'bool' && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) value = 'true';
      else value = argv[++i];
    }
    if (value === undefined) throw new ConfigError(`option '${flag}' needs a value`);
    out.set(spec.key, value);
  }
  return out;
}

/**
 * Flags win over HEARTH_* environment variables, which win over defaults. Fails with a ConfigError naming
 * the flag or variable on the first bad value.
 */
export function parseSettings(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  specs: readonly SettingSpec[],
): Record<string, string | number | boolean | undefined> {
  const flags = parseFlags(argv, specs);
  const result: Record<string, string | number | boolean | undefined> = {};
  for (const spec of specs) {
    const fromFlag = flags.get(spec.key);
    const fromEnv = env[spec.env];
    if (fromFlag !== undefined) result[spec.key] = convert(spec, fromFlag, spec.flag);
    else if (fromEnv !== undefined && fromEnv !== '') result[spec.key] = convert(spec, fromEnv, spec.env);
    else result[spec.key] = typeof spec.default === 'function' ? spec.default() : spec.default;
  }
  return result;
}

export function parseServeConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Config {
  const s = parseSettings(argv, env, SERVE_SETTINGS) as unknown as Config;
  const config: Config = { ...s, gpuLayers: parseGpuLayers(String(s.gpuLayers), argv.some((a) => a === '--gpu-layers' || a.startsWith('--gpu-layers=')) ? '--gpu-layers' : 'HEARTH_GPU_LAYERS'), gpuBackend: s.gpuBackend === undefined ? undefined : path.resolve(s.gpuBackend), dataDir: path.resolve(s.dataDir), modelsDir: path.resolve(s.modelsDir), appDir: s.appDir === undefined ? undefined : path.resolve(s.appDir) };
  if (config.modelId !== undefined && !/^[\w.-]+\/[\w.:-]+$/.test(config.modelId)) {
    throw new ConfigError(`--model-id: must look like <namespace>/<model_name>, got '${config.modelId}'`);
  }
  for (const key of ['openaiBaseUrl', 'anthropicBaseUrl', 'geminiBaseUrl', 'mistralBaseUrl', 'publicUrl'] as const) {
    const v = config[key];
    if (v !== undefined && !/^https?:\/\//.test(v)) throw new ConfigError(`${key}: must be an http(s) URL, got '${v}'`);
  }
  return Object.freeze(config);
}

/** `auto` or a whole number of layers, 0..100000. */
export function parseGpuLayers(raw: string, source: string): 'auto' | number {
  const v = raw.trim();
  if (v === 'auto') return 'auto';
  if (!/^\d{1,6}$/.test(v) || Number(v) > 100_000) throw new ConfigError(`${source}: expected auto or a number of layers 0..100000, got '${raw}'`);
  return Number(v);
}

/** `--help` text for a list of settings. */
export function settingsHelp(specs: readonly SettingSpec[]): string {
  return specs
    .map((s) => {
      const def = s.secret ? '' : typeof s.default === 'function' ? ` (default: ${String(s.default())})` : s.default === undefined ? '' : ` (default: ${String(s.default)})`;
      return `  ${`${s.flag} <${s.values ? s.values.join('|') : s.type}>`.padEnd(44)} ${s.help}${def}  [${s.env}]`;
    })
    .join('\n');
}
