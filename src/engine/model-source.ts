import fs from 'node:fs';
import path from 'node:path';
import { createModelDownloader, type ModelDownloader } from 'node-llama-cpp';

/** Where `--model` points: a local GGUF file or a hub URI pulled into the models dir. */
export type ModelSource =
  | { kind: 'local'; path: string; modelId: string }
  | { kind: 'hub'; uri: string; modelId: string };

export interface PullProgress {
  downloadedBytes: number;
  totalBytes: number;
}

export class ModelPullError extends Error {
  override name = 'ModelPullError';
}

const HUB_URI = /^hf:([^/\s]+)\/([^/\s]+)\/(.+\.gguf)(#.+)?$/;

/** Parses `--model` (and `--model-id`) into a source. Model ids: `local/<file stem>` or `<user>/<repo>`. */
export function resolveModelSource(model: string, modelIdOverride?: string): ModelSource {
  const hub = HUB_URI.exec(model);
  if (hub) {
    const [, user, repo] = hub;
    return { kind: 'hub', uri: model, modelId: modelIdOverride ?? `${user}/${repo!.replace(/-GGUF$/i, '')}` };
  }
  if (model.startsWith('hf:') || /^https?:\/\//.test(model)) {
    throw new ModelPullError(`unsupported model URI '${model}': use hf:<user>/<repo>/<file>.gguf or a local .gguf path`);
  }
  const abs = path.resolve(model);
  const stem = path.basename(abs).replace(/\.gguf$/i, '').replace(/[^\w.-]+/g, '-');
  return { kind: 'local', path: abs, modelId: modelIdOverride ?? `local/${stem}` };
}

export interface PullOptions {
  modelsDir: string;
  onProgress: (p: PullProgress) => void;
  /** Give up when no byte arrives for this long. Defaults to 30 s. */
  stallTimeoutMs?: number;
  /** Show node-llama-cpp's progress bar (a terminal is attached). */
  showCliProgress?: boolean;
}

/**
 * Ensures a hub model is present in `modelsDir` and returns its path. An already pulled file is reused
 * without network access. Failures (no network, unknown repo, stall) reject with a ModelPullError that
 * says how to serve a local file instead; never hangs.
 */
export async function pullModel(source: Extract<ModelSource, { kind: 'hub' }>, options: PullOptions): Promise<string> {
  // node-llama-cpp stores hf:<user>/<repo>/<file> as hf_<user>_<file>; a file already there is reused offline.
  const [, user, , file] = HUB_URI.exec(source.uri)!;
  const existing = path.join(options.modelsDir, `hf_${user}_${path.basename(file!)}`);
  if (fs.existsSync(existing)) {
    const size = fs.statSync(existing).size;
    options.onProgress({ downloadedBytes: size, totalBytes: size });
    return existing;
  }
  fs.mkdirSync(options.modelsDir, { recursive: true });
  const stallMs = options.stallTimeoutMs ?? 30_000;
  let downloader: ModelDownloader | undefined;
  let timer: NodeJS.Timeout | undefined;
  let rejectStall: (e: Error) => void = () => {};
  const stalled = new Promise<never>((_, reject) => { rejectStall = reject; });
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => rejectStall(new ModelPullError(`no progress for ${stallMs / 1000} s`)), stallMs);
  };
  try {
    arm();
    downloader = await Promise.race([
      createModelDownloader({
        modelUri: source.uri,
        dirPath: options.modelsDir,
        showCliProgress: options.showCliProgress ?? false,
        deleteTempFileOnCancel: false,
        onProgress: (s) => {
          arm();
          options.onProgress({ downloadedBytes: s.downloadedSize, totalBytes: s.totalSize });
        },
      }),
      stalled,
    ]);
    arm();
    return await Promise.race([downloader.download(), stalled]);
  } catch (err) {
    await downloader?.cancel().catch(() => {});
    const why = err instanceof Error ? err.message : String(err);
    throw new ModelPullError(
      `could not pull ${source.uri}: ${why}. Without network access, serve a local file instead: hearth serve --model path/to/model.gguf`,
    );
  } finally {
    clearTimeout(timer);
  }
}
