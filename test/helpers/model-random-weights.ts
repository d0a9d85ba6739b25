import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Llama } from 'node-llama-cpp';
import { type EngineSubject, loadEngineSubjects } from './engine-subjects.ts';

/** ../shared/models' llama-2-tiny-random: Llama 2's 32k vocabulary (byte-fallback tokens) on random weights. */
const RANDOM_LLAMA2 = resolve(import.meta.dirname, '../../../shared/models/llama-2-tiny-random.gguf');

/**
 * Engine subjects on random weights for `test` (a name for its warning): the generated models of `generated`
 * ([name, path] pairs, always there) and llama-2-tiny-random where it is present; where it is missing, a warning
 * says that only the generated models run. The caller disposes them (disposeEngineSubjects).
 */
export async function loadRandomWeightSubjects(
  llama: Llama,
  test: string,
  generated: Array<[string, string]>,
  options: { contextSize: number; slots: number },
): Promise<EngineSubject[]> {
  const paths = [...generated];
  if (existsSync(RANDOM_LLAMA2)) paths.push(['llama-2-tiny-random', RANDOM_LLAMA2]);
  else
    console.warn(
      `[${test}] ${RANDOM_LLAMA2} missing: only the generated ${generated.length > 1 ? 'models run' : 'model runs'}`,
    );
  return loadEngineSubjects(llama, paths, options);
}
