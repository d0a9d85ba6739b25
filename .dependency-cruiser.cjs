/**
 * The shape of src/ (docs/architecture.md): feature folders for the platform beside a layered inference spine.
 *
 *   features   accounts <- workspaces <- apps;  inference (the shared model's routes) <- workspaces (project endpoints)
 *   spine      inference -> engine -> (worker thread: worker -> native)
 *   edge       http/ (exchange, router, SSE writer, server): feature-free; features import it, never the reverse
 *   leaves     errors, crypto, log, metrics, lifecycle, protocol (the wire shapes), grammar (JSON Schema / tool calls
 *              -> GBNF, over protocol's types), store (database, secrets), limits (key and sign-in limiters, over store)
 *
 * Each folder below may import only the folders named for it ("only"); main.ts and cli/ compose everything.
 * No module cycles and no folder cycles, in src/ and native/.
 */
const layer = (name) => `^src/${name}/`;
/** The HTTP edge core (one exchange, one router) shared by the service and the standalone tool-server kit. */
const EDGE_CORE =
  '^src/http/(http-exchange|request-head|body-reader|response-writer|request-ids|router|json-body|request-limits|status-text|uws)\\.ts$';
/** A rule: files in `folder` import of src/ only their own folder and `allowed` (folder names or path patterns). */
const only = (folder, allowed) => ({
  name: `${folder}-imports-only-${allowed.length === 0 ? 'itself' : allowed.map((a) => a.replace(/[^a-z-]/g, '')).join('-')}`.slice(
    0,
    120,
  ),
  severity: 'error',
  from: { path: layer(folder) },
  to: { path: '^src/', pathNot: [layer(folder), ...allowed.map((a) => (a.startsWith('^') ? a : layer(a)))] },
});
const LEAVES = ['errors', 'log'];
/** native/'s type-only module: the types the addon speaks, which engine/, worker/, protocol/ and config/ share. */
const NATIVE_TYPES = '^native/generation-job\\.ts$';
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', from: { path: '^(src|native)/' }, to: { circular: true } },
    // Layers (folders) form no cycle either: engine/ -> worker/ -> engine/ through different files is still a cycle.
    {
      name: 'no-folder-cycles',
      severity: 'error',
      scope: 'folder',
      from: { path: '^(src|native)/' },
      to: { circular: true },
    },
    {
      name: 'nothing-imports-main',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/main\\.ts$' },
    },

    // Leaves.
    only('errors', []),
    only('crypto', []),
    only('log', []),
    only('metrics', []),
    only('lifecycle', ['log']),
    only('protocol', ['errors']),
    only('grammar', ['errors', 'protocol']),
    only('store', ['crypto', 'errors']),
    only('front', ['log']),
    only('config', LEAVES),
    only('limits', [...LEAVES, 'store']),

    // The edge: feature-free.
    only('http', [...LEAVES, 'metrics', 'protocol', 'front']),

    // Features.
    only('accounts', [...LEAVES, 'crypto', 'http', 'limits', 'metrics', 'store']),
    only('inference', [...LEAVES, 'accounts', 'engine', 'grammar', 'http', 'limits', 'metrics', 'protocol', 'store']),
    only('providers', [...LEAVES, 'protocol']),
    only('workspaces', [...LEAVES, 'accounts', 'http', 'inference', 'metrics', 'protocol', 'providers', 'store']),
    only('apps', [...LEAVES, 'accounts', 'config', 'http', 'lifecycle', 'metrics', 'protocol', 'store', 'workspaces']),
    only('batch', [...LEAVES, 'accounts', 'http', 'inference', 'limits', 'protocol']),
    only('dashboard', [...LEAVES, 'http']),
    only('ops', [...LEAVES, 'http', 'inference', 'metrics']),
    // The standalone tool-server kit (hearth/tools): the edge core and the leaves only.
    only('tools', [...LEAVES, 'crypto', EDGE_CORE]),

    // The spine. engine/ starts workers by URL and never imports worker/ or native/ (but NATIVE_TYPES).
    only('engine', [...LEAVES, 'lifecycle', 'metrics', 'protocol']),
    // worker/ runs inside Piscina threads: engine message and sampler types, protocol, errors, node-llama-cpp and native/ (the addon).
    only('worker', ['errors', 'protocol', '^src/engine/(worker-protocol|embedding-task|sampling-defaults)\\.ts$']),
    {
      name: 'worker-no-main-thread-packages',
      severity: 'error',
      from: { path: layer('worker') },
      to: { path: '^node_modules/(uWebSockets\\.js|uws-legacy-node20|prom-client|lmdb)/' },
    },
    // native/ is the addon, its loader and its build: it imports nothing of src/.
    { name: 'native-imports-nothing-of-src', severity: 'error', from: { path: '^native/' }, to: { path: '^src/' } },
    // Of native/, src/ imports the type-only module of the types the addon speaks (GenerationJob, SamplingParams,
    // TokenLogprob, NativeTuning); the addon's loader and paths only in worker/ (and main.ts, which hands the event relay to the engine).
    {
      name: 'native-code-only-in-worker',
      severity: 'error',
      from: { path: '^src/', pathNot: [layer('worker'), '^src/main\\.ts$'] },
      to: { path: '^native/', pathNot: NATIVE_TYPES },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: ['^src/.*\\.mjs$', '^native/build/'] },
  },
};
