/**
 * Makes this directory a standalone deployable app that builds offline (run from a Hearth checkout):
 *
 *   node --import tsx examples/tool-server/vendor-kit.ts
 *
 * 1. vendor/hearth/: the `hearth/tools` kit as a package, the way an outside app gets it: tools.js (the
 *    kit and its pure-JS dependencies, ajv and the MCP SDK, bundled into one ES module) plus uWebSockets.js
 *    reduced to the one native binary of this platform and Node ABI, loaded by uws.cjs (no nested
 *    node_modules: `hearth apps deploy` never uploads one). It declares no dependencies, so
 *    `npm install --omit=dev` of the app (`"hearth": "file:vendor/hearth"`) needs no network: what a
 *    sandboxed build on a Yam gets.
 * 2. dist/server.js: this example compiled from TypeScript (imports of `hearth/tools` left to the package).
 *
 * Both are build output (git-ignored) and are uploaded with the app (this directory's .hearthignore does
 * not exclude them). Re-run after changing the kit or the example.
 */
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const here = import.meta.dirname;
const root = path.resolve(here, '../..');
const vendor = path.join(here, 'vendor/hearth');
const uwsFrom = path.join(root, 'node_modules/uWebSockets.js');
const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

fs.rmSync(path.join(here, 'vendor'), { recursive: true, force: true });
fs.rmSync(path.join(here, 'dist'), { recursive: true, force: true });

const banner = "import { createRequire as __hearthCreateRequire } from 'node:module'; const require = __hearthCreateRequire(import.meta.url);";
await build({
  entryPoints: [path.join(root, 'src/tools/index.ts')],
  outfile: path.join(vendor, 'tools.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  plugins: [{ name: 'vendored-uws', setup: (b) => b.onResolve({ filter: /^uWebSockets\.js$/ }, () => ({ path: './uws.cjs', external: true })) }],
  banner: { js: banner },
  logLevel: 'warning',
});
const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
fs.writeFileSync(path.join(vendor, 'package.json'), `${JSON.stringify({ name: 'hearth', version, description: 'The hearth/tools kit, vendored for offline builds', type: 'module', exports: { './tools': './tools.js' } }, null, 2)}\n`);

fs.copyFileSync(path.join(uwsFrom, 'binaries', binary), path.join(vendor, binary));
fs.copyFileSync(path.join(uwsFrom, 'LICENSE'), path.join(vendor, 'LICENSE.uWebSockets.js'));
fs.writeFileSync(
  path.join(vendor, 'uws.cjs'),
  `'use strict';\n// uWebSockets.js (Apache-2.0, LICENSE.uWebSockets.js): the native binary for this platform and Node ABI.\nmodule.exports = require(\`./uws_\${process.platform}_\${process.arch}_\${process.versions.modules}.node\`);\n`,
);

await build({
  entryPoints: [path.join(here, 'server.ts')],
  outfile: path.join(here, 'dist/server.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['hearth', 'hearth/*'],
  logLevel: 'warning',
});
process.stdout.write(`vendored hearth/tools (${binary}) into ${path.relative(process.cwd(), vendor)} and built ${path.relative(process.cwd(), path.join(here, 'dist/server.js'))}\n`);
