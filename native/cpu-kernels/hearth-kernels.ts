import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Hearth's own kernels in its native build of ggml's CPU backend (cpu-kernels-build.ts), on top of the sources of
 * node-llama-cpp's bundle. Today one: q8_0_gemm.h, Q8_0 weights x Q8_0 activations on AVX-512 VNNI CPUs (see its
 * comment), which llamafile_sgemm tries before its own kernels. The prebuilt libraries and llama-server stay
 * ggml's; `--cpu-kernels auto` keeps timing the two builds per model and loads the faster.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const KERNEL_HEADERS = ['q8_0_gemm.h'];
const SGEMM = join('src', 'ggml-cpu', 'llamafile', 'sgemm.cpp');

/** Each edit of sgemm.cpp: an anchor that occurs exactly once, and what goes right before or after it. */
const EDITS: { anchor: string; before?: string; after?: string }[] = [
  { anchor: '#include "simd-mappings.h"\n', after: '#include "q8_0_gemm.h"\n' },
  {
    anchor: '    // only enable sgemm for prompt processing\n',
    before: [
      '#if defined(HEARTH_Q8_0_GEMM)',
      '    if (Atype == GGML_TYPE_Q8_0 && Btype == GGML_TYPE_Q8_0 && Ctype == GGML_TYPE_F32)',
      '        return hearth_q8_0::gemm(m, n, k, (const block_q8_0 *)A, lda, (const block_q8_0 *)B, ldb, (float *)C, ldc,',
      '                                 params->ith, params->nth);',
      '#endif',
      '',
    ].join('\n'),
  },
];

/** Identity of the kernels and edits: build.json keeps it, so a changed kernel rebuilds the library. */
export function hearthKernelsStamp(): string {
  const hash = createHash('sha256');
  for (const h of KERNEL_HEADERS) hash.update(readFileSync(join(HERE, h)));
  hash.update(JSON.stringify(EDITS));
  return hash.digest('hex').slice(0, 16);
}

/** Puts the kernels into ggml's source tree `ggmlDir` (the bundle's ggml/); throws when an anchor is not there once. */
export function applyHearthKernels(ggmlDir: string): void {
  for (const h of KERNEL_HEADERS) copyFileSync(join(HERE, h), join(ggmlDir, dirname(SGEMM), h));
  const file = join(ggmlDir, SGEMM);
  let text = readFileSync(file, 'utf8');
  for (const e of EDITS) {
    const at = text.indexOf(e.anchor);
    if (at < 0 || text.indexOf(e.anchor, at + 1) >= 0)
      throw new Error(`${SGEMM} of this llama.cpp release does not have "${e.anchor.trim()}" exactly once`);
    text = text.slice(0, at) + (e.before ?? '') + e.anchor + (e.after ?? '') + text.slice(at + e.anchor.length);
  }
  writeFileSync(file, text);
}
