import { ConfigError, loadServeConfig, type Config, type SettingSource } from '../config/config.ts';
import { SERVE_SETTINGS } from '../config/config-spec.ts';
import type { ModelEntry } from '../config/model-entries.ts';
import { resolveModelSource } from '../engine/model-source.ts';

const HELP = `Usage: hearth config print [--json] [--config FILE] [serve options...]

Prints the settings \`hearth serve\` would run with, given the same options, HEARTH_* variables and
config file: each setting's name (its flag without --, as in the config file), effective value and
source (default, file, env or flag). Secrets print as (set). Each model served prints as a \`model\` line in
--model's form, SOURCE,id=NS/NAME[,slots=N][,context-size=N][,gpu-layers=L], with the id it is served as.
--json prints an object keyed by name: { "port": { "value": 8080, "source": "default" }, ... }; "model" also
carries "models": [{ "source", "id", "slots"?, "context-size"?, "gpu-layers"? }, ...].`;

/** One effective setting as printed: a secret's value is `(set)`, an unset one's is undefined. */
export interface EffectiveSetting {
  name: string;
  value: string | number | boolean | undefined;
  source: SettingSource;
  /** `model` only: every model served, in order, with its id and its own settings. */
  models?: PrintedModel[];
}

/** A model as `config print` shows it: the config file's `models:` keys, the id always (given or derived). */
export interface PrintedModel {
  source: string;
  id: string;
  slots?: number;
  'context-size'?: number;
  'gpu-layers'?: 'auto' | number;
}

function printedModel(m: ModelEntry): PrintedModel {
  const p: PrintedModel = { source: m.source, id: m.id ?? resolveModelSource(m.source).modelId };
  if (m.slots !== undefined) p.slots = m.slots;
  if (m.contextSize !== undefined) p['context-size'] = m.contextSize;
  if (m.gpuLayers !== undefined) p['gpu-layers'] = m.gpuLayers;
  return p;
}

/** A model in `--model`'s own syntax, so a printed line can be given back as a flag. */
function modelArgument(p: PrintedModel): string {
  return [
    p.source,
    ...Object.entries(p)
      .filter(([k]) => k !== 'source')
      .map(([k, v]) => `${k}=${String(v)}`),
  ].join(',');
}

/** The effective serve settings, in table order, secrets redacted; also the deprecation warnings. */
export function effectiveSettings(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { settings: EffectiveSetting[]; warnings: string[] } {
  const { config, sources, warnings } = loadServeConfig(argv, env);
  const settings = SERVE_SETTINGS.map((spec) => {
    const value = config[spec.key as keyof Config] as EffectiveSetting['value'];
    const setting: EffectiveSetting = {
      name: spec.flag.slice(2),
      value: 'secret' in spec && spec.secret && value !== undefined ? '(set)' : value,
      source: sources[spec.key as keyof Config],
    };
    // `model` is the first model's source; every model, with its id and own settings, is in `models`.
    if (spec.key === 'model') setting.models = config.models.map(printedModel);
    return setting;
  });
  return { settings, warnings };
}

/** Aligned text: name, value (`(unset)` when none), source; one `model` line per model, in `--model`'s syntax. */
export function formatSettings(settings: readonly EffectiveSetting[]): string {
  const shown = settings.flatMap((s) =>
    s.models
      ? s.models.map((m) => ({ ...s, text: modelArgument(m) }))
      : [{ ...s, text: s.value === undefined ? '(unset)' : String(s.value) }],
  );
  const nameWidth = Math.max(...shown.map((s) => s.name.length));
  const valueWidth = Math.max(...shown.map((s) => s.text.length));
  return shown.map((s) => `${s.name.padEnd(nameWidth)}  ${s.text.padEnd(valueWidth)}  ${s.source}`).join('\n');
}

export async function configCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h' || rest.includes('--help')) {
    out(HELP);
    return sub ? 0 : 2;
  }
  if (sub !== 'print') throw new ConfigError(`unknown subcommand '${sub}' (npx hearth config --help)`);
  const json = rest.includes('--json');
  const { settings, warnings } = effectiveSettings(
    rest.filter((a) => a !== '--json'),
    process.env,
  );
  for (const warning of warnings) process.stderr.write(`hearth config: ${warning}\n`);
  if (json)
    out(
      JSON.stringify(
        Object.fromEntries(
          settings.map((s) => [
            s.name,
            { value: s.value ?? null, source: s.source, ...(s.models ? { models: s.models } : {}) },
          ]),
        ),
      ),
    );
  else out(formatSettings(settings));
  return 0;
}
