/**
 * Hearth's Q8_0 matrix multiply (native/cpu-kernels/q8_0_gemm.h), which Hearth's native build of ggml's CPU backend
 * tries before llamafile's kernels: its check program (q8_0_gemm_check.cpp) compiled for this CPU and run against a
 * plain reference over every tile tail, odd block counts, strided rows and several threads. On a CPU without
 * AVX-512 VNNI the kernel is not compiled and the program says so; the test accepts that answer only when
 * /proc/cpuinfo really lacks the flags. And the edits that put it into sgemm.cpp (cpu-kernels/hearth-kernels.ts):
 * placed at their anchors, refused when an anchor is missing or repeated.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyHearthKernels } from '../../native/cpu-kernels/hearth-kernels.ts';
import { NATIVE_DIR } from '../../native/paths.ts';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-q8-0-gemm-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const compiler = spawnSync('g++', ['--version']).status === 0;
const x86Linux = process.platform === 'linux' && process.arch === 'x64';

describe.skipIf(!compiler || !x86Linux)('q8_0_gemm.h against the reference', () => {
  it('matches on every shape of the check, or is absent only where the CPU lacks AVX-512 VNNI', () => {
    const binary = path.join(work, 'q8_0_gemm_check');
    const source = path.join(NATIVE_DIR, 'cpu-kernels', 'q8_0_gemm_check.cpp');
    const built = spawnSync('g++', ['-O2', '-march=native', '-std=c++17', '-o', binary, source], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    const ran = spawnSync(binary, { encoding: 'utf8' });
    const flags = /^flags\s*:(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.split(' ') ?? [];
    const hasIsa = ['avx512f', 'avx512bw', 'avx512_vnni', 'f16c'].every((f) => flags.includes(f));
    if (hasIsa) {
      expect(ran.stdout).toMatch(/^ok: \d+ outputs match$/m);
      expect(ran.status).toBe(0);
    } else {
      expect(ran.stdout).toBe('skip: this CPU build has no AVX-512 VNNI\n');
    }
  });
});

describe('the edits to llamafile sgemm.cpp', () => {
  const tree = (text: string) => {
    const dir = fs.mkdtempSync(path.join(work, 'ggml-'));
    fs.mkdirSync(path.join(dir, 'src', 'ggml-cpu', 'llamafile'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'src', 'ggml-cpu', 'llamafile', 'sgemm.cpp'), text);
    return dir;
  };
  const sgemm = [
    '#include "ggml-quants.h"',
    '#include "simd-mappings.h"',
    'bool llamafile_sgemm() {',
    '    // only enable sgemm for prompt processing',
    '    if (n < 2) return false;',
    '}',
    '',
  ].join('\n');

  it('includes the kernel and calls it first for Q8_0 x Q8_0 into F32, beside a copy of the header', () => {
    const dir = tree(sgemm);
    applyHearthKernels(dir);
    const out = fs.readFileSync(path.join(dir, 'src', 'ggml-cpu', 'llamafile', 'sgemm.cpp'), 'utf8');
    expect(out).toContain('#include "simd-mappings.h"\n#include "q8_0_gemm.h"\n');
    const call = out.indexOf('return hearth_q8_0::gemm(');
    expect(call).toBeGreaterThan(out.indexOf('bool llamafile_sgemm() {'));
    expect(call).toBeLessThan(out.indexOf('// only enable sgemm for prompt processing'));
    expect(out).toContain('if (Atype == GGML_TYPE_Q8_0 && Btype == GGML_TYPE_Q8_0 && Ctype == GGML_TYPE_F32)');
    expect(fs.readFileSync(path.join(dir, 'src', 'ggml-cpu', 'llamafile', 'q8_0_gemm.h'), 'utf8')).toBe(
      fs.readFileSync(path.join(NATIVE_DIR, 'cpu-kernels', 'q8_0_gemm.h'), 'utf8'),
    );
  });

  it('refuses a source where an anchor is missing or occurs twice, leaving the file as it was', () => {
    for (const text of [
      sgemm.replace('#include "simd-mappings.h"\n', ''),
      sgemm.replace('    // only enable', '    // only enable sgemm for prompt processing\n    // only enable'),
    ]) {
      const dir = tree(text);
      expect(() => applyHearthKernels(dir)).toThrow(/does not have ".+" exactly once/);
      expect(fs.readFileSync(path.join(dir, 'src', 'ggml-cpu', 'llamafile', 'sgemm.cpp'), 'utf8')).toBe(text);
    }
  });
});
