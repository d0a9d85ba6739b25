/**
 * Import direction of src/ (architecture.md): http -> gateway -> {engine, providers, store} -> {protocol, metrics} -> errors.
 * worker/ runs inside Piscina threads and imports only engine message and sampler types, protocol, errors, node-llama-cpp and native/;
 * engine/ never imports worker/ or native/ (it starts workers by URL). No module cycles and no folder cycles, in src/ and native/.
 */
const layer = (name) => `^src/${name}/`;
/** The HTTP edge core (one exchange, one router) shared by the service and the standalone tool-server kit. */
const EDGE_CORE = '^src/http/(http-exchange|router|json-body|request-limits|status-text)\\.ts$';
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', from: { path: '^(src|native)/' }, to: { circular: true } },
    // Layers (folders) form no cycle either: engine/ -> worker/ -> engine/ through different files is still a cycle.
    { name: 'no-folder-cycles', severity: 'error', scope: 'folder', from: { path: '^(src|native)/' }, to: { circular: true } },
    { name: 'nothing-imports-main', severity: 'error', from: { path: '^src/', pathNot: '^src/cli/' }, to: { path: '^src/main\\.ts$' } },
    { name: 'errors-are-leaves', severity: 'error', from: { path: layer('errors') }, to: { path: '^src/', pathNot: layer('errors') } },
    { name: 'protocol-only-errors', severity: 'error', from: { path: layer('protocol') }, to: { path: '^src/', pathNot: [layer('protocol'), layer('errors')] } },
    { name: 'worker-stays-in-its-thread', severity: 'error', from: { path: layer('worker') }, to: { path: [layer('http'), layer('gateway'), layer('store'), layer('metrics'), layer('providers'), layer('tools'), layer('cli'), '^node_modules/(uWebSockets\\.js|prom-client|lmdb)/'] } },
    { name: 'worker-only-engine-protocol', severity: 'error', from: { path: layer('worker') }, to: { path: layer('engine'), pathNot: '^src/engine/(worker-protocol|sampling-defaults)\\.ts$' } },
    // The main thread reaches a worker only through its entry URL (local-engine.ts), never by import.
    { name: 'engine-not-worker', severity: 'error', from: { path: layer('engine') }, to: { path: [layer('worker'), '^native/'] } },
    // native/ is the addon's loader and build: of src/ it knows the engine's sampler types and protocol types only.
    { name: 'native-only-sampling-and-protocol', severity: 'error', from: { path: '^native/' }, to: { path: '^src/', pathNot: ['^src/engine/sampling-defaults\\.ts$', layer('protocol')] } },
    { name: 'engine-below-gateway', severity: 'error', from: { path: layer('engine') }, to: { path: [layer('http'), layer('gateway'), layer('store'), layer('providers'), layer('cli')] } },
    { name: 'providers-below-gateway', severity: 'error', from: { path: layer('providers') }, to: { path: [layer('http'), layer('gateway'), layer('store'), layer('engine'), layer('cli')] } },
    { name: 'store-below-gateway', severity: 'error', from: { path: layer('store') }, to: { path: [layer('http'), layer('gateway'), layer('engine'), layer('providers'), layer('cli')] } },
    { name: 'gateway-below-http', severity: 'error', from: { path: layer('gateway') }, to: { path: [layer('http'), layer('cli')] } },
    { name: 'metrics-leaf', severity: 'error', from: { path: layer('metrics') }, to: { path: '^src/', pathNot: layer('metrics') } },
    { name: 'tools-standalone', severity: 'error', from: { path: layer('tools') }, to: { path: '^src/', pathNot: [layer('tools'), layer('errors'), layer('log'), EDGE_CORE] } },
    { name: 'edge-core-standalone', severity: 'error', from: { path: EDGE_CORE }, to: { path: '^src/', pathNot: [EDGE_CORE, layer('errors')] } },
    { name: 'http-not-store', severity: 'error', from: { path: layer('http') }, to: { path: [layer('store'), layer('engine') + '(?!generation\\.ts)', layer('providers'), layer('cli')] } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: ['^src/.*\\.mjs$', '^native/build/'] },
  },
};
