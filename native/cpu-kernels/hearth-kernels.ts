import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { applySourcePatches, sourcePatchesStamp, type SourcePatch } from '../ggml-source-patches.ts';

/**
 * Hearth's own kernels in its native build of ggml's CPU backend (cpu-kernels-build.ts), on top of the sources of
 * node-llama-cpp's bundle:
 * - q8_0_gemm.h: Q8_0 weights x Q8_0 activations on AVX-512 VNNI CPUs, which llamafile_sgemm tries before its own;
 * - flash_attn_decode.h: attention of generating rows on AVX-512 CPUs, which ggml's flash-attention op tries first.
 * Each header says why and what it takes. The prebuilt libraries and llama-server stay ggml's; `--cpu-kernels auto`
 * keeps timing the two builds per model and loads the faster.
 */

const HERE = dirname(fileURLToPath(import.meta.url));

const PATCHES: SourcePatch[] = [
  {
    file: join('src', 'ggml-cpu', 'llamafile', 'sgemm.cpp'),
    headers: ['q8_0_gemm.h'],
    edits: [
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
    ],
  },
  {
    file: join('src', 'ggml-cpu', 'ops.cpp'),
    headers: ['flash_attn_decode.h', 'flash_attn_decode_ggml.h'],
    edits: [
      {
        anchor:
          'static void ggml_compute_forward_flash_attn_ext_f16(\n        const ggml_compute_params * params,\n        ggml_tensor * dst) {\n',
        before: '#include "flash_attn_decode_ggml.h"\n\n',
        after: [
          '#if defined(HEARTH_FLASH_ATTN_DECODE)',
          '    if (hearth_flash_attn_decode(params, dst)) return;',
          '#endif',
          '',
        ].join('\n'),
      },
    ],
  },
];

/** Identity of the kernels and edits: build.json keeps it, so a changed kernel rebuilds the library. */
export function hearthKernelsStamp(): string {
  return sourcePatchesStamp(HERE, PATCHES);
}

/**
 * Puts the kernels into ggml's source tree `ggmlDir` (the bundle's ggml/). Throws, before writing anything, when an
 * anchor is not in its file exactly once.
 */
export function applyHearthKernels(ggmlDir: string): void {
  applySourcePatches(ggmlDir, HERE, PATCHES);
}
