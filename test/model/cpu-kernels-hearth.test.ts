/**
 * Hearth's own kernels in its native build of ggml's CPU backend (native/cpu-kernels/): each one's check program
 * compiled for this CPU and run against a plain reference (q8_0_gemm_check.cpp: the Q8_0 matrix multiply over every
 * tile tail, odd block counts, strided rows and several threads; flash_attn_decode_check.cpp: the attention of
 * generating rows over head sizes, query groups, masks, shared sequences and thread splits). On a CPU without the
 * instructions a kernel needs it is not compiled and its program says so; the test accepts that answer only when
 * /proc/cpuinfo really lacks the flags. And the edits that put them into ggml's sources (hearth-kernels.ts): placed
 * at their anchors, refused, with no file written, when an anchor is missing or repeated.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyHearthKernels } from '../../native/cpu-kernels/hearth-kernels.ts';
import { NATIVE_DIR } from '../../native/paths.ts';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-kernels-check-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const compiler = spawnSync('g++', ['--version']).status === 0;
const x86Linux = process.platform === 'linux' && process.arch === 'x64';
const cpuFlags = (): string[] =>
  /^flags\s*:(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.split(' ') ?? [];

describe.skipIf(!compiler || !x86Linux)("Hearth's kernels against their references", () => {
  const checks = [
    { name: 'q8_0_gemm', isa: ['avx512f', 'avx512bw', 'avx512_vnni', 'f16c'], skip: 'no AVX-512 VNNI' },
    { name: 'flash_attn_decode', isa: ['avx512f'], skip: 'no AVX-512' },
  ];
  for (const check of checks) {
    it(`${check.name}.h matches on every shape of its check, or is absent only where the CPU lacks ${check.isa.join(', ')}`, () => {
      const binary = path.join(work, `${check.name}_check`);
      const source = path.join(NATIVE_DIR, 'cpu-kernels', `${check.name}_check.cpp`);
      const built = spawnSync('g++', ['-O2', '-march=native', '-std=c++17', '-o', binary, source], {
        encoding: 'utf8',
      });
      expect(built.status, built.stderr).toBe(0);
      const ran = spawnSync(binary, { encoding: 'utf8' });
      if (check.isa.every((f) => cpuFlags().includes(f))) {
        expect(ran.stdout).toMatch(/^ok: \d+ outputs match$/m);
        expect(ran.status).toBe(0);
      } else {
        expect(ran.stdout).toBe(`skip: this CPU build has ${check.skip}\n`);
      }
    });
  }
});

describe("the edits to ggml's sources", () => {
  const sgemm = [
    '#include "ggml-quants.h"',
    '#include "simd-mappings.h"',
    'bool llamafile_sgemm() {',
    '    // only enable sgemm for prompt processing',
    '    if (n < 2) return false;',
    '}',
    '',
  ].join('\n');
  const ops = [
    '#include "ops.h"',
    'static void ggml_compute_forward_flash_attn_ext_f16_one_chunk(',
    '        const ggml_compute_params * params,',
    '        ggml_tensor * dst, int ir0) {',
    '}',
    'static void ggml_compute_forward_flash_attn_ext_f16(',
    '        const ggml_compute_params * params,',
    '        ggml_tensor * dst) {',
    '    const ggml_tensor * q = dst->src[0];',
    '}',
    '',
  ].join('\n');
  const SGEMM = path.join('src', 'ggml-cpu', 'llamafile', 'sgemm.cpp');
  const OPS = path.join('src', 'ggml-cpu', 'ops.cpp');
  const tree = (sgemmText: string, opsText: string) => {
    const dir = fs.mkdtempSync(path.join(work, 'ggml-'));
    fs.mkdirSync(path.join(dir, path.dirname(SGEMM)), { recursive: true });
    fs.writeFileSync(path.join(dir, SGEMM), sgemmText);
    fs.writeFileSync(path.join(dir, OPS), opsText);
    return dir;
  };
  const read = (dir: string, file: string) => fs.readFileSync(path.join(dir, file), 'utf8');
  const ours = (header: string) => fs.readFileSync(path.join(NATIVE_DIR, 'cpu-kernels', header), 'utf8');

  it('sgemm.cpp includes the Q8_0 kernel and calls it first for Q8_0 x Q8_0 into F32, beside a copy of the header', () => {
    const dir = tree(sgemm, ops);
    applyHearthKernels(dir);
    const out = read(dir, SGEMM);
    expect(out).toContain('#include "simd-mappings.h"\n#include "q8_0_gemm.h"\n');
    const call = out.indexOf('return hearth_q8_0::gemm(');
    expect(call).toBeGreaterThan(out.indexOf('bool llamafile_sgemm() {'));
    expect(call).toBeLessThan(out.indexOf('// only enable sgemm for prompt processing'));
    expect(out).toContain('if (Atype == GGML_TYPE_Q8_0 && Btype == GGML_TYPE_Q8_0 && Ctype == GGML_TYPE_F32)');
    expect(read(dir, path.join(path.dirname(SGEMM), 'q8_0_gemm.h'))).toBe(ours('q8_0_gemm.h'));
  });

  it('ops.cpp calls the attention kernel first in the flash-attention op (not in its helper), beside both headers', () => {
    const dir = tree(sgemm, ops);
    applyHearthKernels(dir);
    const out = read(dir, OPS);
    const include = out.indexOf('#include "flash_attn_decode_ggml.h"\n');
    const op = out.indexOf('static void ggml_compute_forward_flash_attn_ext_f16(\n');
    expect(include).toBeGreaterThan(out.indexOf('static void ggml_compute_forward_flash_attn_ext_f16_one_chunk('));
    expect(include).toBeLessThan(op);
    expect(out.slice(op)).toMatch(
      /^static void ggml_compute_forward_flash_attn_ext_f16\(\n {8}const ggml_compute_params \* params,\n {8}ggml_tensor \* dst\) \{\n#if defined\(HEARTH_FLASH_ATTN_DECODE\)\n {4}if \(hearth_flash_attn_decode\(params, dst\)\) return;\n#endif\n {4}const ggml_tensor \* q = dst->src\[0\];/,
    );
    for (const h of ['flash_attn_decode.h', 'flash_attn_decode_ggml.h'])
      expect(read(dir, path.join(path.dirname(OPS), h))).toBe(ours(h));
  });

  it('refuses a source where an anchor is missing or occurs twice, leaving every file as it was', () => {
    const cases: [string, string][] = [
      [sgemm.replace('#include "simd-mappings.h"\n', ''), ops],
      [sgemm.replace('    // only enable', '    // only enable sgemm for prompt processing\n    // only enable'), ops],
      [sgemm, ops.replace('        ggml_tensor * dst) {\n    const', '        ggml_tensor * dst, int x) {\n    const')],
      [sgemm, ops + ops.slice(ops.indexOf('static void ggml_compute_forward_flash_attn_ext_f16(\n'))],
    ];
    for (const [sgemmText, opsText] of cases) {
      const dir = tree(sgemmText, opsText);
      expect(() => applyHearthKernels(dir)).toThrow(/does not have "[^]+" exactly once/);
      expect(read(dir, SGEMM)).toBe(sgemmText);
      expect(read(dir, OPS)).toBe(opsText);
      expect(fs.readdirSync(path.join(dir, path.dirname(OPS)))).toEqual(['llamafile', 'ops.cpp']);
    }
  });
});
