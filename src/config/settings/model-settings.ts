import os from 'node:os';
import { DEFAULT_MODEL_URI, defaultModelsDir } from '../default-model.ts';
import type { SettingSpec } from '../setting-spec.ts';

/** `--model-memory-mib` when not set: three quarters of the memory this process may use (the machine's, or its cgroup's limit when lower). */
function defaultModelMemoryMiB(): number {
  const total = os.totalmem();
  const limit = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  const bytes = limit !== undefined && limit > 0 && limit < total ? limit : total;
  return Math.max(1, Math.floor((bytes / (1 << 20)) * 0.75));
}

/**
 * Which models the service serves and how many it keeps loaded: the model list, the default id, loading, memory
 * and idle unloading. One entry per setting; config-spec.ts joins the groups into SERVE_SETTINGS in this order.
 */
export const MODEL_SETTINGS = [
  {
    key: 'model',
    flag: '--model',
    env: 'HEARTH_MODEL',
    group: 'everyday',
    type: 'string',
    default: DEFAULT_MODEL_URI,
    repeatable: true,
    help: 'A local .gguf path or a hub URI hf:<user>/<repo>/<file>; give it several times to serve several models, each as SOURCE[,id=NS/NAME][,slots=N][,context-size=N][,gpu-layers=auto|N] (the config file: a models: list; docs/models.md)',
  },
  {
    key: 'modelId',
    flag: '--model-id',
    env: 'HEARTH_MODEL_ID',
    group: 'everyday',
    type: 'string',
    default: undefined,
    help: 'Model id <namespace>/<name> served on the API (default derived from --model)',
  },
  {
    key: 'loadWaitMs',
    flag: '--load-wait-ms',
    env: 'HEARTH_LOAD_WAIT_MS',
    group: 'everyday',
    type: 'int',
    min: 0,
    max: 600000,
    default: 30000,
    help: 'How long a request for a model that is not loaded waits for its load before 503 model_warming_up + Retry-After (a model still being pulled answers at once)',
  },
  {
    key: 'maxLoadedModels',
    flag: '--max-loaded-models',
    env: 'HEARTH_MAX_LOADED_MODELS',
    group: 'everyday',
    type: 'int',
    min: 0,
    max: 1024,
    default: 0,
    help: 'Most models loaded at once; loading another unloads the least recently used idle one (0 = no limit but the memory budget)',
  },
  {
    key: 'modelMemoryMiB',
    flag: '--model-memory-mib',
    env: 'HEARTH_MODEL_MEMORY_MIB',
    group: 'everyday',
    type: 'int',
    min: 1,
    max: 1 << 30,
    default: defaultModelMemoryMiB,
    help: 'Memory budget of the loaded models (estimated from each GGUF before its first load, then what its load was measured to take); loading past it unloads the least recently used idle ones',
    doc: { default: "three quarters of the machine's memory (or the cgroup's limit)" },
  },
  {
    key: 'idleUnloadS',
    flag: '--idle-unload-s',
    env: 'HEARTH_IDLE_UNLOAD_S',
    group: 'everyday',
    type: 'int',
    min: 0,
    max: 31536000,
    default: 0,
    help: 'Unload a model nobody used for this many seconds (0 = never); the next request loads it again',
  },
  {
    key: 'modelsDir',
    flag: '--models-dir',
    env: 'HEARTH_MODELS_DIR',
    group: 'everyday',
    type: 'string',
    default: defaultModelsDir,
    help: 'Where pulled models are stored; the only directory an owner may add local models from (POST /api/v1/models)',
    doc: { default: '`~/.cache/hearth/models`' },
  },
] as const satisfies readonly SettingSpec[];
