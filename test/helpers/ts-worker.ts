import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);
const TSX_API = pathToFileURL(resolve(require.resolve('tsx/package.json'), '../dist/esm/api/index.mjs')).href;
const REPO = resolve(import.meta.dirname, '../..');

/**
 * A worker thread running `body` (ES module code) with the TypeScript loader registered (workers do not
 * inherit it) and `parentPort` / `workerData` in scope; `modules` maps a name in scope to a module of this
 * repository (path from its root, e.g. 'src/worker/native-slot-engine.ts') or a package name, imported as a namespace.
 */
export function tsWorker(body: string, workerData: unknown, modules: Record<string, string> = {}): Worker {
  const imports = Object.entries(modules)
    .map(
      ([name, spec]) =>
        `const ${name} = await import('${spec.includes('/') ? pathToFileURL(resolve(REPO, spec)).href : pathToFileURL(require.resolve(spec)).href}');`,
    )
    .join('\n');
  const code = `
    import { parentPort, workerData } from 'node:worker_threads';
    import { register } from '${TSX_API}';
    register();
    ${imports}
    ${body}
  `;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`), { workerData });
}
