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
const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
// The uWS build this runtime loads (src/http/uws.ts picks it): its binary is the one vendored.
const uws = (await import('../../src/http/uws.ts')) as typeof import('../../src/http/uws.ts');
const uwsFrom =
  uws.uwsBuild === 'btc-vision-20.57.0'
    ? path.join(root, 'node_modules/uWebSockets.js')
    : path.join(root, 'node_modules/uws-legacy-node20/binaries');

fs.rmSync(path.join(here, 'vendor'), { recursive: true, force: true });
fs.rmSync(path.join(here, 'dist'), { recursive: true, force: true });

// The kit's uws.ts, vendored: the copied binary (through uws.cjs) and what uws.ts says of its build.
fs.mkdirSync(vendor, { recursive: true });
const shim = path.join(vendor, 'uws-shim.mjs');
fs.writeFileSync(
  shim,
  `import uWS from 'uWebSockets.js';\nexport { uWS };\nexport const uwsBuild = ${JSON.stringify(uws.uwsBuild)};\n` +
    `export const uwsClosesAnsweredIdle = ${uws.uwsClosesAnsweredIdle};\nexport const UWS_MAX_HEAD_BYTES = ${uws.UWS_MAX_HEAD_BYTES};\n` +
    `export const LEGACY_ABI = ${JSON.stringify(uws.LEGACY_ABI)};\nexport function loadUws() { return { uWS, build: uwsBuild }; }\n`,
);
/** How both bundles are built: one ESM file for Node 20+, its imports bundled in. */
const NODE20_ESM_BUNDLE = { bundle: true, platform: 'node', format: 'esm', target: 'node20' } as const;
const banner =
  "import { createRequire as __hearthCreateRequire } from 'node:module'; const require = __hearthCreateRequire(import.meta.url);";
await build({
  entryPoints: [path.join(root, 'src/tools/index.ts')],
  outfile: path.join(vendor, 'tools.js'),
  ...NODE20_ESM_BUNDLE,
  plugins: [
    {
      name: 'vendored-uws',
      setup: (b) => {
        b.onResolve({ filter: /^uWebSockets\.js$/ }, () => ({ path: './uws.cjs', external: true }));
        b.onResolve({ filter: /(^|\/)uws\.ts$/ }, () => ({ path: shim }));
      },
    },
  ],
  banner: { js: banner },
  logLevel: 'warning',
});
const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
fs.writeFileSync(
  path.join(vendor, 'package.json'),
  `${JSON.stringify({ name: 'hearth', version, description: 'The hearth/tools kit, vendored for offline builds', type: 'module', exports: { './tools': './tools.js' } }, null, 2)}\n`,
);

fs.rmSync(shim);
fs.copyFileSync(path.join(uwsFrom, binary), path.join(vendor, binary));
const license = [path.join(uwsFrom, 'LICENSE'), path.join(uwsFrom, '..', 'LICENSE')].find((f) => fs.existsSync(f));
if (license) fs.copyFileSync(license, path.join(vendor, 'LICENSE.uWebSockets.js'));
else
  fs.writeFileSync(
    path.join(vendor, 'LICENSE.uWebSockets.js'),
    'uWebSockets.js (Alex Hultman), Apache License 2.0: https://www.apache.org/licenses/LICENSE-2.0\n',
  );
fs.writeFileSync(
  path.join(vendor, 'uws.cjs'),
  `'use strict';\n// uWebSockets.js (Apache-2.0, LICENSE.uWebSockets.js): the native binary for this platform and Node ABI.\n` +
    `// Its head limit is read when it loads (src/http/uws.ts).\nprocess.env.UWS_HTTP_MAX_HEADERS_SIZE = '${uws.UWS_MAX_HEAD_BYTES}';\nmodule.exports = require(\`./uws_\${process.platform}_\${process.arch}_\${process.versions.modules}.node\`);\n`,
);

await build({
  entryPoints: [path.join(here, 'server.ts')],
  outfile: path.join(here, 'dist/server.js'),
  ...NODE20_ESM_BUNDLE,
  external: ['hearth', 'hearth/*'],
  logLevel: 'warning',
});
process.stdout.write(
  `vendored hearth/tools (${binary}) into ${path.relative(process.cwd(), vendor)} and built ${path.relative(process.cwd(), path.join(here, 'dist/server.js'))}\n`,
);
