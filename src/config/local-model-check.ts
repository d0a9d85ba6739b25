import fs from 'node:fs';
import { ConfigError } from './setting-value.ts';
import type { ModelEntry } from './model-entries.ts';

/** The first bytes of every GGUF file. */
const GGUF_MAGIC = Buffer.from('GGUF', 'latin1');

/**
 * Checks, before `hearth serve` starts anything, that each local model (a source that is not `hf:`) is a
 * readable GGUF file: a path that does not exist, a directory, an unreadable file or one without the GGUF
 * magic is a ConfigError (one line, exit code 2) naming the path as given and why, instead of a server
 * that starts and sits in a failed state. Whether the GGUF loads is still the engine's to find out.
 */
export function checkLocalModels(models: readonly ModelEntry[]): void {
  for (const m of models) {
    if (m.source.startsWith('hf:')) continue;
    const why = problemOf(m.source);
    if (why !== null)
      throw new ConfigError(
        `model ${m.source}: ${why}; give --model a GGUF file, or hf:<user>/<repo>/<file>.gguf to pull one`,
      );
  }
}

function problemOf(file: string): string | null {
  let fd: number;
  try {
    if (fs.statSync(file).isDirectory()) return 'is a directory, not a GGUF file';
    fd = fs.openSync(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? 'no such file'
      : code === 'EACCES'
        ? 'cannot be read (permission denied)'
        : `cannot be read (${code ?? String(err)})`;
  }
  try {
    const head = Buffer.alloc(4);
    const n = fs.readSync(fd, head, 0, 4, 0);
    return n === 4 && head.equals(GGUF_MAGIC) ? null : 'is not a GGUF file (no GGUF magic at its start)';
  } finally {
    fs.closeSync(fd);
  }
}
