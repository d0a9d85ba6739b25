import { ConfigError } from './setting-value.ts';

/**
 * One model the server serves (contract.md "Several models on one server"): where it comes from (a local
 * .gguf path or `hf:<user>/<repo>/<file>`) and, where it differs from the server-wide setting, its id, slots,
 * context size and GPU layers. Unset fields take `--model-id` (a single model only), `--slots`,
 * `--context-size` and `--gpu-layers`.
 */
export interface ModelEntry {
  source: string;
  id?: string;
  slots?: number;
  contextSize?: number;
  gpuLayers?: 'auto' | number;
}

/** The options a `--model` value may carry after its source, and the config file keys of a `models:` item. */
const OPTION_KEYS = ['id', 'slots', 'context-size', 'gpu-layers'] as const;
type OptionKey = (typeof OPTION_KEYS)[number];

/** `<namespace>/<model_name>`, the model id shape (also `--model-id`'s). */
export const MODEL_ID = /^[\w.-]+\/[\w.:-]+$/;

/**
 * Parses one `--model` value: `SOURCE[,id=NS/NAME][,slots=N][,context-size=N][,gpu-layers=auto|N]`. Options
 * are peeled from the end, so a path holding a comma still works unless a piece after it looks like an option.
 * `name` (the flag or variable) goes into every error message.
 */
export function parseModelArgument(raw: string, name: string): ModelEntry {
  const pieces = raw.split(',');
  const options = new Map<OptionKey, string>();
  while (pieces.length > 1) {
    const last = pieces[pieces.length - 1]!;
    const m = /^([a-z-]+)=(.*)$/.exec(last.trim());
    if (!m || !(OPTION_KEYS as readonly string[]).includes(m[1]!)) break;
    if (options.has(m[1] as OptionKey)) throw new ConfigError(`${name}: '${m[1]}' given twice in '${raw}'`);
    options.set(m[1] as OptionKey, m[2]!);
    pieces.pop();
  }
  const source = pieces.join(',').trim();
  if (source === '') throw new ConfigError(`${name}: no model source in '${raw}'`);
  return entryOf(source, (key) => options.get(key), name);
}

/**
 * Parses the config file's `models:` list: each item a source string (as `--model` takes it) or a mapping
 * `{source, id?, slots?, context-size?, gpu-layers?}`. `name` is `file: models`.
 */
export function parseModelList(value: unknown, name: string): ModelEntry[] {
  if (!Array.isArray(value) || value.length === 0)
    throw new ConfigError(`${name}: expected a non-empty list of models`);
  return value.map((item, i) => {
    const at = `${name}[${i}]`;
    if (typeof item === 'string') return parseModelArgument(item, at);
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      throw new ConfigError(
        `${at}: expected a source string or a mapping {source, id, slots, context-size, gpu-layers}`,
      );
    const record = item as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (key !== 'source' && !(OPTION_KEYS as readonly string[]).includes(key))
        throw new ConfigError(`${at}: unknown key '${key}' (source, ${OPTION_KEYS.join(', ')})`);
    }
    if (typeof record.source !== 'string' || record.source.trim() === '')
      throw new ConfigError(`${at}: 'source' must be a local .gguf path or hf:<user>/<repo>/<file>`);
    return entryOf(record.source.trim(), (key) => (record[key] === undefined ? undefined : String(record[key])), at);
  });
}

function entryOf(source: string, option: (key: OptionKey) => string | undefined, name: string): ModelEntry {
  const entry: ModelEntry = { source };
  const id = option('id');
  if (id !== undefined) {
    if (!MODEL_ID.test(id)) throw new ConfigError(`${name}: id must look like <namespace>/<model_name>, got '${id}'`);
    entry.id = id;
  }
  const slots = option('slots');
  if (slots !== undefined) entry.slots = whole(slots, 1, 256, `${name}: slots`);
  const contextSize = option('context-size');
  if (contextSize !== undefined) entry.contextSize = whole(contextSize, 64, 1 << 20, `${name}: context-size`);
  const gpuLayers = option('gpu-layers');
  if (gpuLayers !== undefined)
    entry.gpuLayers = gpuLayers.trim() === 'auto' ? 'auto' : whole(gpuLayers, 0, 100_000, `${name}: gpu-layers`);
  return entry;
}

function whole(raw: string, min: number, max: number, name: string): number {
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name}: expected an integer, got '${raw}'`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name}: ${n} is out of range ${min}..${max}`);
  return n;
}
