import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Hearth's edits of ggml's sources (node-llama-cpp's bundle), the one mechanism its builds share: the CPU backend
 * (cpu-kernels/hearth-kernels.ts) and the CUDA backend (cuda-patches/hearth-cuda-patches.ts).
 */

/** One source file of ggml's tree: the headers copied beside it, and its edits. */
export interface SourcePatch {
  /** Path inside ggml/. */
  file: string;
  /** Files of the patch set's own folder, copied next to `file`. */
  headers: string[];
  /**
   * Each edit: an anchor that occurs exactly once in the file, and what goes right before or after it, or (`replace`)
   * what takes its place.
   */
  edits: { anchor: string; before?: string; after?: string; replace?: string }[];
}

/** Identity of a patch set (its headers and edits): a build records it, so a changed patch rebuilds. */
export function sourcePatchesStamp(headersDir: string, patches: SourcePatch[]): string {
  const hash = createHash('sha256');
  for (const p of patches) for (const h of p.headers) hash.update(readFileSync(join(headersDir, h)));
  hash.update(JSON.stringify(patches));
  return hash.digest('hex').slice(0, 16);
}

/**
 * Applies `patches` to ggml's source tree `ggmlDir`, with the headers from `headersDir`. Throws, before writing
 * anything, when an anchor is not in its file exactly once (another llama.cpp release). Apply to a pristine tree.
 */
export function applySourcePatches(ggmlDir: string, headersDir: string, patches: SourcePatch[]): void {
  const edited = patches.map((p) => {
    let text = readFileSync(join(ggmlDir, p.file), 'utf8');
    for (const e of p.edits) {
      const at = text.indexOf(e.anchor);
      if (at < 0 || text.indexOf(e.anchor, at + 1) >= 0)
        throw new Error(`${p.file} of this llama.cpp release does not have "${e.anchor.trim()}" exactly once`);
      const middle = e.replace ?? e.anchor;
      text = text.slice(0, at) + (e.before ?? '') + middle + (e.after ?? '') + text.slice(at + e.anchor.length);
    }
    return { p, text };
  });
  for (const { p, text } of edited) {
    for (const h of p.headers) copyFileSync(join(headersDir, h), join(ggmlDir, dirname(p.file), h));
    writeFileSync(join(ggmlDir, p.file), text);
  }
}
