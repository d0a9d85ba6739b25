/**
 * Hearth's edits of ggml's CUDA backend (native/cuda-patches/), without a GPU: applied to the real sources of the
 * pinned llama.cpp (node-llama-cpp's bundle), they put the shape key and the cache bound where build-cuda.sh
 * expects them, and refuse a tree they do not fit; cuda_graph_key_check.cpp, built against that release's ggml
 * headers, checks the key (one per shape, the same for a rebuilt graph, ggml's own with
 * HEARTH_CUDA_GRAPH_KEY=first-node) and the cache's bound and eviction order.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyHearthCudaPatches } from '../../native/cuda-patches/hearth-cuda-patches.ts';
import { findPackageDir, NATIVE_DIR } from '../../native/paths.ts';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-cuda-patches-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const bundle = path.join(findPackageDir('node-llama-cpp') ?? '', 'llama', 'gitRelease.bundle');
const compiler = spawnSync('g++', ['--version']).status === 0;
const COMMON = path.join('src', 'ggml-cuda', 'common.cuh');
const CU = path.join('src', 'ggml-cuda', 'ggml-cuda.cu');
const SOURCES = ['ggml/include', 'ggml/src/ggml-impl.h', `ggml/${COMMON}`, `ggml/${CU}`];

/** A fresh copy of the release's files the edits and the check need, as ggml/ under a new folder. */
let pristine = '';
function ggmlTree(): string {
  const dir = fs.mkdtempSync(path.join(work, 'tree-'));
  fs.cpSync(pristine, dir, { recursive: true });
  return path.join(dir, 'ggml');
}
const read = (ggml: string, file: string) => fs.readFileSync(path.join(ggml, file), 'utf8');

describe.skipIf(!fs.existsSync(bundle))("the edits to ggml-cuda's sources of the pinned llama.cpp", () => {
  beforeAll(() => {
    pristine = path.join(work, 'pristine');
    const repo = path.join(work, 'bundle.git');
    fs.mkdirSync(pristine);
    const commit = execFileSync('git', ['bundle', 'list-heads', bundle], { encoding: 'utf8' }).split(' ')[0];
    execFileSync('git', ['init', '-q', '--bare', repo]);
    execFileSync('git', [`--git-dir=${repo}`, 'fetch', '-q', bundle, `+${commit}:refs/heads/release`]);
    const tar = execFileSync('git', [`--git-dir=${repo}`, 'archive', 'release', ...SOURCES], {
      maxBuffer: 64 << 20,
    });
    execFileSync('tar', ['-x', '-C', pristine], { input: tar });
  });

  it('key every CUDA graph by its shape and bound the cache in cuda_graph(), beside a copy of the header', () => {
    const ggml = ggmlTree();
    const before = read(ggml, CU);
    applyHearthCudaPatches(ggml);
    const common = read(ggml, COMMON);
    expect(common).toContain('#include "ggml-common.h"\n#include "cuda_graph_key.h"\n');
    const lookup = common.indexOf('ggml_cuda_graph * cuda_graph(const void * first_node_ptr) {');
    const room = common.indexOf('hearth_cuda_graphs_make_room(cuda_graphs, HEARTH_CUDA_GRAPHS_MAX);');
    expect(lookup).toBeGreaterThan(0);
    expect(room).toBeGreaterThan(common.indexOf('if (it == cuda_graphs.end()) {', lookup));
    expect(room).toBeLessThan(common.indexOf('cuda_graphs.emplace(first_node_ptr', lookup));

    const cu = read(ggml, CU);
    expect(cu).toContain(
      'static const void * ggml_cuda_graph_get_key(ggml_cgraph * cgraph) {\n    return hearth_cuda_graph_key(cgraph);\n}\n',
    );
    // Only the key changed: the file is the release's but for that one line.
    expect(cu.replace('return hearth_cuda_graph_key(cgraph);', 'return cgraph->nodes[0];')).toBe(before);
    expect(read(ggml, path.join('src', 'ggml-cuda', 'cuda_graph_key.h'))).toBe(
      fs.readFileSync(path.join(NATIVE_DIR, 'cuda-patches', 'cuda_graph_key.h'), 'utf8'),
    );
  });

  it('refuse a tree they do not fit (here: one already edited), writing nothing', () => {
    const ggml = ggmlTree();
    applyHearthCudaPatches(ggml);
    const common = read(ggml, COMMON);
    const cu = read(ggml, CU);
    expect(() => applyHearthCudaPatches(ggml)).toThrow(/ggml-cuda\.cu of this llama\.cpp release does not have/);
    expect(read(ggml, COMMON)).toBe(common);
    expect(read(ggml, CU)).toBe(cu);
  });

  it.skipIf(!compiler)('the key and the cache bound hold in cuda_graph_key_check.cpp, in both key modes', () => {
    const ggml = ggmlTree();
    const binary = path.join(work, 'cuda_graph_key_check');
    const source = path.join(NATIVE_DIR, 'cuda-patches', 'cuda_graph_key_check.cpp');
    const built = spawnSync(
      'g++',
      ['-std=c++17', '-O1', `-I${path.join(ggml, 'include')}`, `-I${path.join(ggml, 'src')}`, '-o', binary, source],
      { encoding: 'utf8' },
    );
    expect(built.status, built.stderr).toBe(0);
    const { HEARTH_CUDA_GRAPH_KEY: _unset, ...env } = process.env;
    const shape = spawnSync(binary, { encoding: 'utf8', env });
    expect(shape.stdout).toBe('ok: shape key, cache bound 32\n');
    expect(shape.status).toBe(0);
    const upstream = spawnSync(binary, ['first-node'], {
      encoding: 'utf8',
      env: { ...env, HEARTH_CUDA_GRAPH_KEY: 'first-node' },
    });
    expect(upstream.stdout).toBe('ok: first-node key, cache bound 32\n');
    expect(upstream.status).toBe(0);
    // The program does fail: told to expect ggml's key while the shape key is in force.
    const mismatched = spawnSync(binary, ['first-node'], { encoding: 'utf8', env });
    expect(mismatched.stdout).toMatch(/^FAIL: /m);
    expect(mismatched.status).toBe(1);
  });
});
