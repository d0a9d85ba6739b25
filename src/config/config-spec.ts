import os from 'node:os';
import { DEFAULT_MODEL_URI, defaultModelsDir } from './default-model.ts';

/**
 * Every setting of `hearth serve`, declared once: the key, the flag, the HEARTH_* variable, the type, the
 * default, the help text, the group and any deprecated names. The `Config` type (config.ts), the parser, the
 * YAML config file's keys (the flag without `--`), `--help` / `--help-all`, `hearth config print` and the
 * README's configuration table (readme-table.ts) all come from this list.
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
type SettingValue<S> = S extends { type: 'int' } ? number
  : S extends { type: 'bool' } ? boolean
  : S extends { type: 'enum'; values: readonly (infer V)[] } ? V
  : string;

/** The settings of a table by key, `| undefined` where the default is undefined. */
export type SettingsOf<T extends readonly SettingSpec[]> = {
  [S in T[number] as S['key']]: SettingValue<S> | (S extends { default: undefined } ? undefined : never);
};

export { DEFAULT_MODEL_URI };

const cores = () => Math.max(1, os.availableParallelism());

/** `--model-memory-mib` when not set: three quarters of the memory this process may use (the machine's, or its cgroup's limit when lower). */
function defaultModelMemoryMiB(): number {
  const total = os.totalmem();
  const limit = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  const bytes = limit !== undefined && limit > 0 && limit < total ? limit : total;
  return Math.max(1, Math.floor((bytes / (1 << 20)) * 0.75));
}

export const SERVE_SETTINGS = [
  { key: 'configFile', flag: '--config', env: 'HEARTH_CONFIG', group: 'everyday', type: 'string', default: undefined, help: 'A YAML file of settings, keyed by flag name without -- (body-limit-bytes: 2097152); flags and HEARTH_* variables win over it' },
  { key: 'port', flag: '--port', env: 'HEARTH_PORT', group: 'everyday', type: 'int', min: 0, max: 65535, default: 8080, help: 'TCP port to listen on (0 = any free port)' },
  { key: 'host', flag: '--host', env: 'HEARTH_HOST', group: 'everyday', type: 'string', default: '127.0.0.1', help: 'Address to bind; 0.0.0.0 to listen on every interface' },
  { key: 'publicUrl', flag: '--public-url', env: 'HEARTH_PUBLIC_URL', group: 'everyday', type: 'string', default: undefined, help: 'Base URL clients use, for endpoint URLs in API answers (default http://host:port)' },
  { key: 'dataDir', flag: '--data-dir', env: 'HEARTH_DATA_DIR', group: 'everyday', type: 'string', default: './data', help: 'Directory of the LMDB records and the master key file' },
  { key: 'databaseUrl', flag: '--database-url', env: 'HEARTH_DATABASE_URL', group: 'everyday', type: 'string', default: undefined, secret: true, help: 'PostgreSQL URL (postgres://user:pass@host:port/db): keep the records there instead of LMDB in --data-dir, shared by every replica started with it' },
  { key: 'model', flag: '--model', env: 'HEARTH_MODEL', group: 'everyday', type: 'string', default: DEFAULT_MODEL_URI, repeatable: true, help: 'A local .gguf path or a hub URI hf:<user>/<repo>/<file>; give it several times to serve several models, each as SOURCE[,id=NS/NAME][,slots=N][,context-size=N][,gpu-layers=auto|N] (the config file: a models: list; docs/models.md)' },
  { key: 'modelId', flag: '--model-id', env: 'HEARTH_MODEL_ID', group: 'everyday', type: 'string', default: undefined, help: 'Model id <namespace>/<name> served on the API (default derived from --model)' },
  { key: 'loadWaitMs', flag: '--load-wait-ms', env: 'HEARTH_LOAD_WAIT_MS', group: 'everyday', type: 'int', min: 0, max: 600000, default: 30000, help: 'How long a request for a model that is not loaded waits for its load before 503 model_warming_up + Retry-After (a model still being pulled answers at once)' },
  { key: 'maxLoadedModels', flag: '--max-loaded-models', env: 'HEARTH_MAX_LOADED_MODELS', group: 'everyday', type: 'int', min: 0, max: 1024, default: 0, help: 'Most models loaded at once; loading another unloads the least recently used idle one (0 = no limit but the memory budget)' },
  { key: 'modelMemoryMiB', flag: '--model-memory-mib', env: 'HEARTH_MODEL_MEMORY_MIB', group: 'everyday', type: 'int', min: 1, max: 1 << 30, default: defaultModelMemoryMiB, help: "Memory budget of the loaded models (estimated from each GGUF before its first load, then what its load was measured to take); loading past it unloads the least recently used idle ones", doc: { default: "three quarters of the machine's memory (or the cgroup's limit)" } },
  { key: 'idleUnloadS', flag: '--idle-unload-s', env: 'HEARTH_IDLE_UNLOAD_S', group: 'everyday', type: 'int', min: 0, max: 31536000, default: 0, help: 'Unload a model nobody used for this many seconds (0 = never); the next request loads it again' },
  { key: 'modelsDir', flag: '--models-dir', env: 'HEARTH_MODELS_DIR', group: 'everyday', type: 'string', default: defaultModelsDir, help: 'Where pulled models are stored; the only directory an owner may add local models from (POST /api/v1/models)', doc: { default: '`~/.cache/hearth/models`' } },
  { key: 'engine', flag: '--engine', env: 'HEARTH_ENGINE', group: 'tuning', type: 'enum', values: ['auto', 'native', 'node-llama-cpp', 'instant'], default: 'auto', help: 'Token engine: native batching loop, node-llama-cpp sequences, auto (native, else node-llama-cpp), instant (test engine, no model math)' },
  { key: 'workers', flag: '--workers', env: 'HEARTH_WORKERS', group: 'everyday', type: 'int', min: 1, max: 64, default: 1, help: 'Model worker threads (each loads the model once)' },
  { key: 'slots', flag: '--slots', env: 'HEARTH_SLOTS', group: 'everyday', type: 'int', min: 1, max: 256, default: undefined, help: 'Concurrent sequences per worker (continuous batching width); unset: 8, or 64 when the native loop runs on a GPU', doc: { default: '`8` on the CPU, `64` on a GPU' } },
  { key: 'threads', flag: '--threads', env: 'HEARTH_THREADS', group: 'tuning', type: 'int', min: 0, max: 256, default: 0, help: 'Compute threads per worker; 0 = chosen from the core count (see README)' },
  { key: 'contextSize', flag: '--context-size', env: 'HEARTH_CONTEXT_SIZE', group: 'everyday', type: 'int', min: 64, max: 1 << 20, default: 2048, help: 'Context tokens per slot (prompt + completion), capped by the model' },
  { key: 'batchSize', flag: '--batch-size', env: 'HEARTH_BATCH_SIZE', group: 'tuning', type: 'int', min: 16, max: 1 << 16, default: 512, help: 'Tokens per decode step (prompt chunking)' },
  { key: 'cpuKernels', flag: '--cpu-kernels', env: 'HEARTH_CPU_KERNELS', group: 'tuning', type: 'string', default: 'auto', help: "Native engine: ggml's CPU kernels: prebuilt = node-llama-cpp's library for this CPU family; prebuilt:VARIANT = that one of its libraries (x64, haswell, skylakex, zen4...: libggml-cpu-VARIANT.so), to compare CPUs' arithmetic on one machine; native = the build for this very CPU (npm run build:native, with cmake); auto = time prebuilt and native on the model at first start and keep the faster (cached per model)", doc: { type: '`auto` / `prebuilt` / `prebuilt:VARIANT` / `native`' } },
  { key: 'gpuLayers', flag: '--gpu-layers', env: 'HEARTH_GPU_LAYERS', group: 'tuning', type: 'string', default: 'auto', help: 'Native engine: model layers on the GPU: auto = every layer on the first usable GPU, else the CPU; N = that many (a GPU that cannot run is a warning and the CPU); 0 = CPU only', doc: { type: '`auto` / int' } },
  { key: 'gpuBackend', flag: '--gpu-backend', env: 'HEARTH_GPU_BACKEND', group: 'tuning', type: 'string', default: undefined, help: "Native engine: the ggml CUDA backend library to use (default: native/build/cuda/libggml-cuda.so from npm run build:cuda, else node-llama-cpp's prebuilt one)", doc: { default: '(found)' } },
  { key: 'weightRepack', flag: '--weight-repack', env: 'HEARTH_WEIGHT_REPACK', group: 'tuning', type: 'bool', default: true, help: "Native engine: keep llama.cpp's repacked (AMX / SIMD) weight layouts; false matches llama-server's --no-repack" },
  { key: 'persistentThreads', flag: '--thread-pool', env: 'HEARTH_THREAD_POOL', group: 'tuning', type: 'bool', default: true, help: 'Native engine: persistent compute threads (as llama-server); false = threads started for every decode step' },
  { key: 'threadPoll', flag: '--thread-poll', env: 'HEARTH_THREAD_POLL', group: 'tuning', type: 'int', min: 0, max: 100, default: 0, help: "Native engine: how long idle compute threads spin before sleeping, 0-100 (llama-server's --poll is 50)" },
  { key: 'kvUnified', flag: '--kv-unified', env: 'HEARTH_KV_UNIFIED', group: 'tuning', type: 'bool', default: false, help: "Native engine: one KV buffer shared by all slots (llama-server's --kv-unified): a step that mixes prompt chunks and generating slots is one pass over the weights, at the cost of attention over every slot's cells; false = one KV stream per slot" },
  { key: 'promptCacheMiB', flag: '--prompt-cache-mib', env: 'HEARTH_PROMPT_CACHE_MIB', group: 'tuning', type: 'int', min: 0, max: 1 << 20, default: undefined, help: "Native engine: MiB of KV state per model worker kept in host memory, so a prompt that starts like one no slot holds any more (more conversations than slots) is restored, not evaluated again (llama-server's --cache-ram; 0 = off). Default: an eighth of the machine's memory (or the cgroup's limit) over the workers, at most 2048 per worker", doc: { default: 'an eighth of the memory over the workers, at most `2048`' } },
  { key: 'promptCacheScope', flag: '--prompt-cache-scope', env: 'HEARTH_PROMPT_CACHE_SCOPE', group: 'everyday', type: 'enum', values: ['account', 'key', 'global'], default: 'account', help: "Who may reuse a prompt's cached state (slot prefixes, the host prompt cache), and so read it back through cached_tokens and time to first token: account = the keys of one account (app keys count as their account's), key = each API key alone, global = everyone (safe only when a single tenant uses the server)" },
  { key: 'prefillStepPercent', flag: '--prefill-step-percent', env: 'HEARTH_PREFILL_STEP_PERCENT', group: 'tuning', type: 'int', min: 0, max: 1000, default: 0, help: 'Native engine: while slots are generating, a step that also prefills prompts takes at most this percentage of a decode-only step (measured each step; prompt chunks shrink as their tokens get dearer), within --step-token-budget; 0 (or up to 100) = off' },
  { key: 'stepTokenBudget', flag: '--step-token-budget', env: 'HEARTH_STEP_TOKEN_BUDGET', group: 'tuning', type: 'int', min: 0, max: 1 << 16, default: 0, help: 'Native engine: most tokens per decode step while any slot is generating, so long prompts are prefilled in chunks and streams keep their pace (0 = --batch-size)' },
  { key: 'maxTokens', flag: '--max-tokens', env: 'HEARTH_MAX_TOKENS', group: 'everyday', type: 'int', min: 1, max: 1 << 20, default: 4096, help: 'Upper bound on max_tokens; also the default when a request sets none' },
  { key: 'bodyLimit', flag: '--body-limit-bytes', env: 'HEARTH_BODY_LIMIT_BYTES', group: 'everyday', type: 'int', min: 1024, max: 1 << 30, default: 1 << 20, help: 'Largest accepted request body, in bytes', deprecated: { flag: '--body-limit', env: 'HEARTH_BODY_LIMIT' } },
  { key: 'queueLimit', flag: '--queue-limit', env: 'HEARTH_QUEUE_LIMIT', group: 'everyday', type: 'int', min: 0, max: 1 << 20, default: 64, help: 'Requests allowed to wait for a slot; beyond it 503 + Retry-After' },
  { key: 'streamBufferLimit', flag: '--stream-buffer-limit-bytes', env: 'HEARTH_STREAM_BUFFER_LIMIT_BYTES', group: 'tuning', type: 'int', min: 4096, max: 1 << 30, default: 1 << 20, help: 'Bytes buffered for a slow streaming client before its generation is cancelled', deprecated: { flag: '--stream-buffer-limit', env: 'HEARTH_STREAM_BUFFER_LIMIT' } },
  { key: 'keepAliveMs', flag: '--keep-alive-ms', env: 'HEARTH_KEEP_ALIVE_MS', group: 'tuning', type: 'int', min: 100, max: 600000, default: 15000, help: 'SSE keep-alive comment interval while a stream waits' },
  { key: 'metricsToken', flag: '--metrics-token', env: 'HEARTH_METRICS_TOKEN', group: 'everyday', type: 'string', default: undefined, secret: true, help: 'When set, GET /metrics requires this bearer token' },
  { key: 'secretKey', flag: '--secret-key', env: 'HEARTH_SECRET_KEY', group: 'everyday', type: 'string', default: undefined, secret: true, help: 'Master key (64 hex chars or 44-char base64) for provider-key encryption; default: a 0600 key file in the data dir' },
  { key: 'sessionIdleMs', flag: '--session-idle-ms', env: 'HEARTH_SESSION_IDLE_MS', group: 'everyday', type: 'int', min: 1000, max: 31536000000, default: 86400000, help: 'A dashboard session ends after this long without a request' },
  { key: 'responsesTtlDays', flag: '--responses-ttl-days', env: 'HEARTH_RESPONSES_TTL_DAYS', group: 'everyday', type: 'int', min: 1, max: 3650, default: 30, help: 'How long a stored Responses API response (store: true, the default) is kept for previous_response_id and GET /responses/{id}' },
  { key: 'batchTtlDays', flag: '--batch-ttl-days', env: 'HEARTH_BATCH_TTL_DAYS', group: 'tuning', type: 'int', min: 1, max: 3650, default: 30, help: 'How long Batch API files and batches (their output and error files too) are kept' },
  { key: 'batchFileLimit', flag: '--batch-file-limit-bytes', env: 'HEARTH_BATCH_FILE_LIMIT_BYTES', group: 'tuning', type: 'int', min: 1024, max: 2 ** 34, default: 100 << 20, help: 'Largest Batch API input file (POST /files, purpose batch), in bytes; also at most 50,000 lines' },
  { key: 'batchConcurrency', flag: '--batch-concurrency', env: 'HEARTH_BATCH_CONCURRENCY', group: 'tuning', type: 'int', min: 1, max: 4096, default: 4, help: 'Batch API lines this replica answers at once (each a generation at batch priority, which yields to interactive work; bench:batch measured 4 faster than 8 on the default 8 slots)' },
  { key: 'sessionMaxAgeMs', flag: '--session-max-age-ms', env: 'HEARTH_SESSION_MAX_AGE_MS', group: 'everyday', type: 'int', min: 1000, max: 31536000000, default: 604800000, help: 'A dashboard session ends this long after sign-in, used or not' },
  { key: 'front', flag: '--front', env: 'HEARTH_FRONT', group: 'everyday', type: 'enum', values: ['auto', 'haproxy', 'off'], default: 'auto', help: 'HTTP front: haproxy = HAProxy (2.6+) on the public port answers malformed HTTP and serialises pipelined requests, uWS behind it on a private socket; auto = haproxy when installed, else off (a warning); off = uWS alone (see docs/http-front.md)' },
  { key: 'trustProxy', flag: '--trust-proxy', env: 'HEARTH_TRUST_PROXY', group: 'everyday', type: 'bool', default: false, help: 'Take the client address for sign-in limits from the first X-Forwarded-For entry (only behind a proxy that sets it)' },
  { key: 'provisionDelayMs', flag: '--provision-delay-ms', env: 'HEARTH_PROVISION_DELAY_MS', group: 'testing', type: 'int', min: 0, max: 3600000, default: 0, help: 'Delay of the asynchronous step that takes a new Yam to ready and a new inference project to ready (0 = at once, after the answer)' },
  { key: 'appSandbox', flag: '--app-sandbox', env: 'HEARTH_APP_SANDBOX', group: 'everyday', type: 'enum', values: ['bwrap', 'none'], default: 'bwrap', help: 'How apps on Yams are isolated: bwrap (bubblewrap sandbox) or none (no isolation; a warning at boot)' },
  { key: 'appNetwork', flag: '--app-network', env: 'HEARTH_APP_NETWORK', group: 'everyday', type: 'enum', values: ['isolated', 'host'], default: 'isolated', help: "Apps' network (with --app-sandbox bwrap): isolated = each app process and build step in a network namespace of its own (pasta, Debian package passt; Hearth runs as root), reaching the outside world and Hearth's API at HEARTH_API_URL, nothing else of this machine; host = the host's network, every loopback service included (a warning at boot)" },
  { key: 'appPasta', flag: '--app-pasta', env: 'HEARTH_APP_PASTA', group: 'tuning', type: 'string', default: 'pasta', help: 'The pasta binary (Debian package passt) that connects isolated apps to the network' },
  { key: 'appBwrap', flag: '--app-bwrap', env: 'HEARTH_APP_BWRAP', group: 'tuning', type: 'string', default: 'bwrap', help: 'The bubblewrap binary' },
  { key: 'appHost', flag: '--app-host', env: 'HEARTH_APP_HOST', group: 'everyday', type: 'bool', default: true, help: "This replica runs the apps on Yams (their processes, deployments, Yam checks); in a fleet, false on every replica but the app host, where the app routes answer 503 app_host_unavailable (see docs/fleet.md)" },
  { key: 'appDir', flag: '--app-dir', env: 'HEARTH_APP_DIR', group: 'everyday', type: 'string', default: undefined, help: "Where apps' releases live (default <data-dir>/apps)" },
  { key: 'appArchiveLimit', flag: '--app-archive-limit-bytes', env: 'HEARTH_APP_ARCHIVE_LIMIT_BYTES', group: 'tuning', type: 'int', min: 1024, max: 1 << 30, default: 50 << 20, help: 'Largest accepted app archive upload (.tar.gz), in bytes', deprecated: { flag: '--app-archive-limit', env: 'HEARTH_APP_ARCHIVE_LIMIT' } },
  { key: 'appMaxFiles', flag: '--app-max-files', env: 'HEARTH_APP_MAX_FILES', group: 'tuning', type: 'int', min: 1, max: 1 << 22, default: 10000, help: 'Most entries an app archive may unpack to' },
  { key: 'appMaxUnpackedBytes', flag: '--app-max-unpacked-bytes', env: 'HEARTH_APP_MAX_UNPACKED_BYTES', group: 'tuning', type: 'int', min: 1024, max: 2 ** 40, default: 512 << 20, help: 'Most bytes an app archive may unpack to' },
  { key: 'appRepositories', flag: '--app-repositories', env: 'HEARTH_APP_REPOSITORIES', group: 'everyday', type: 'enum', values: ['public', 'network', 'local'], default: 'public', help: 'What app deployments may clone: public = http(s) URLs of public hosts only (pinned to the checked addresses, no redirects); network = http(s), ssh:// and git:// to any address (a LAN git server); local = also file:// and local paths on this machine (development only)' },
  { key: 'appStartTimeout', flag: '--app-start-timeout-s', env: 'HEARTH_APP_START_TIMEOUT_S', group: 'tuning', type: 'int', min: 1, max: 3600, default: 60, help: 'Seconds a new app process has to answer its health check before the deployment fails', deprecated: { flag: '--app-start-timeout', env: 'HEARTH_APP_START_TIMEOUT' } },
  { key: 'appBuildTimeout', flag: '--app-build-timeout-s', env: 'HEARTH_APP_BUILD_TIMEOUT_S', group: 'tuning', type: 'int', min: 1, max: 86400, default: 600, help: 'Seconds each build step (clone, npm install, build script) may take', deprecated: { flag: '--app-build-timeout', env: 'HEARTH_APP_BUILD_TIMEOUT' } },
  { key: 'appGracePeriod', flag: '--app-grace-period-s', env: 'HEARTH_APP_GRACE_PERIOD_S', group: 'tuning', type: 'int', min: 0, max: 3600, default: 10, help: 'Seconds a replaced app process keeps running (requests in flight finish) before it is stopped', deprecated: { flag: '--app-grace-period', env: 'HEARTH_APP_GRACE_PERIOD' } },
  { key: 'appMemoryLimit', flag: '--app-memory-limit-mib', env: 'HEARTH_APP_MEMORY_LIMIT_MIB', group: 'tuning', type: 'int', min: 256, max: 1 << 20, default: 2048, help: "An app process's memory limit in MiB (RLIMIT_DATA: heap and anonymous mappings)", deprecated: { flag: '--app-memory-limit', env: 'HEARTH_APP_MEMORY_LIMIT' } },
  { key: 'appMaxProcesses', flag: '--app-max-processes', env: 'HEARTH_APP_MAX_PROCESSES', group: 'tuning', type: 'int', min: 8, max: 1 << 20, default: 256, help: 'Process/thread limit of app processes (RLIMIT_NPROC, counted per uid)' },
  { key: 'appMaxOpenFiles', flag: '--app-max-open-files', env: 'HEARTH_APP_MAX_OPEN_FILES', group: 'tuning', type: 'int', min: 64, max: 1 << 20, default: 1024, help: 'Open-file limit of app processes (RLIMIT_NOFILE)' },
  { key: 'appProxyTimeout', flag: '--app-proxy-timeout-s', env: 'HEARTH_APP_PROXY_TIMEOUT_S', group: 'tuning', type: 'int', min: 1, max: 3600, default: 60, help: 'Seconds an app has to start answering a proxied request (and the longest silence in a streamed answer is 5 minutes)', deprecated: { flag: '--app-proxy-timeout', env: 'HEARTH_APP_PROXY_TIMEOUT' } },
  { key: 'appProxyBodyLimit', flag: '--app-proxy-body-limit-bytes', env: 'HEARTH_APP_PROXY_BODY_LIMIT_BYTES', group: 'tuning', type: 'int', min: 1024, max: 1 << 30, default: 10 << 20, help: 'Largest request body proxied to an app, in bytes', deprecated: { flag: '--app-proxy-body-limit', env: 'HEARTH_APP_PROXY_BODY_LIMIT' } },
  { key: 'providerTimeoutMs', flag: '--provider-timeout-ms', env: 'HEARTH_PROVIDER_TIMEOUT_MS', group: 'tuning', type: 'int', min: 100, max: 3600000, default: 60000, help: 'Upstream provider time-out (headers, and between stream events)' },
  { key: 'providerDeadlineMs', flag: '--provider-deadline-ms', env: 'HEARTH_PROVIDER_DEADLINE_MS', group: 'tuning', type: 'int', min: 100, max: 86400000, default: 300000, help: 'Deadline of one upstream call for the whole answer (retries, waits and every byte included): a trickling or endless upstream is cut here (504, or an error event once streaming)' },
  { key: 'providerMaxRetries', flag: '--provider-max-retries', env: 'HEARTH_PROVIDER_MAX_RETRIES', group: 'tuning', type: 'int', min: 0, max: 10, default: 2, help: 'Retries of an upstream 429/5xx (with backoff, honouring Retry-After)' },
  { key: 'openaiBaseUrl', flag: '--openai-base-url', env: 'HEARTH_OPENAI_BASE_URL', group: 'testing', type: 'string', default: 'https://api.openai.com/v1', help: 'OpenAI API base URL' },
  { key: 'anthropicBaseUrl', flag: '--anthropic-base-url', env: 'HEARTH_ANTHROPIC_BASE_URL', group: 'testing', type: 'string', default: 'https://api.anthropic.com', help: 'Anthropic API base URL' },
  { key: 'geminiBaseUrl', flag: '--gemini-base-url', env: 'HEARTH_GEMINI_BASE_URL', group: 'testing', type: 'string', default: 'https://generativelanguage.googleapis.com', help: 'Gemini API base URL' },
  { key: 'mistralBaseUrl', flag: '--mistral-base-url', env: 'HEARTH_MISTRAL_BASE_URL', group: 'testing', type: 'string', default: 'https://api.mistral.ai/v1', help: 'Mistral API base URL' },
  { key: 'pullStallTimeoutMs', flag: '--pull-stall-timeout-ms', env: 'HEARTH_PULL_STALL_TIMEOUT_MS', group: 'tuning', type: 'int', min: 1000, max: 86400000, default: 30000, help: 'A model pull that receives no byte for this long fails (state failed, with the reason in the log and /health)' },
  { key: 'shutdownGraceMs', flag: '--shutdown-grace-ms', env: 'HEARTH_SHUTDOWN_GRACE_MS', group: 'everyday', type: 'int', min: 0, max: 600000, default: 10000, help: 'On SIGTERM/SIGINT: how long requests in flight may finish before they are cut and the process exits (see docs/operations.md, "Shutdown")' },
  { key: 'logLevel', flag: '--log-level', env: 'HEARTH_LOG_LEVEL', group: 'everyday', type: 'enum', values: ['debug', 'info', 'warn', 'error'], default: 'info', help: 'Log verbosity (JSON lines on stderr)' },
  { key: 'defaultCores', flag: '--cores', env: 'HEARTH_CORES', group: 'testing', type: 'int', min: 1, max: 1024, default: cores, help: 'CPU cores to plan threads for', doc: { default: 'the core count the OS reports' } },
] as const satisfies readonly SettingSpec[];

/** The parsed settings of `hearth serve`, derived from SERVE_SETTINGS. */
export type ServeSettings = SettingsOf<typeof SERVE_SETTINGS>;

