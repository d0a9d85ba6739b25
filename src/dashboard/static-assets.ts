import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

/**
 * The dashboard's built files (web/dist), read once at start and held in memory for the process's life.
 * Only `index.html` and the files Vite's manifest names (all under `assets/`, content-hashed) exist here:
 * a request can only pick one of these by exact name, so no path from a client ever reaches the file system.
 */
export interface StaticFile {
  body: Buffer;
  /** gzip of `body`, when the type compresses and it saves bytes; computed once here. */
  gzip: Buffer | null;
  contentType: string;
}

export interface DashboardBundle {
  index: StaticFile;
  /** Keyed by the name under `assets/` (e.g. `index-HcVo3AsB.js`). */
  assets: ReadonlyMap<string, StaticFile>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.svg', '.json', '.map']);
/** What a manifest may name: one flat, hashed file under assets/ (never `..`, never a sub-directory). */
const ASSET_NAME = /^assets\/([A-Za-z0-9_-][A-Za-z0-9._-]*)$/;

export function contentTypeOf(file: string): string {
  return CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

function staticFile(file: string, body: Buffer): StaticFile {
  const ext = path.extname(file).toLowerCase();
  let gzip: Buffer | null = null;
  if (COMPRESSIBLE.has(ext) && body.length > 256) {
    const z = zlib.gzipSync(body, { level: 9 });
    if (z.length < body.length) gzip = z;
  }
  return { body, gzip, contentType: contentTypeOf(file) };
}

/** Every `file`, `css[]` and `assets[]` the manifest's chunks name. */
function manifestFiles(manifest: unknown): string[] {
  if (typeof manifest !== 'object' || manifest === null) throw new Error('the manifest is not an object');
  const names = new Set<string>();
  for (const chunk of Object.values(manifest as Record<string, unknown>)) {
    const c = chunk as { file?: unknown; css?: unknown; assets?: unknown };
    for (const f of [c.file, ...(Array.isArray(c.css) ? c.css : []), ...(Array.isArray(c.assets) ? c.assets : [])])
      if (typeof f === 'string') names.add(f);
  }
  return [...names];
}

/**
 * Loads `distDir` (index.html + `.vite/manifest.json` + the files it names). Returns null when the
 * dashboard was not built; throws when a build exists but is inconsistent (a named file is missing,
 * or the manifest names something outside assets/).
 */
export function loadDashboardBundle(distDir: string): DashboardBundle | null {
  const indexPath = path.join(distDir, 'index.html');
  const manifestPath = path.join(distDir, '.vite', 'manifest.json');
  if (!fs.existsSync(indexPath) || !fs.existsSync(manifestPath)) return null;
  const manifest: unknown = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const assets = new Map<string, StaticFile>();
  for (const rel of manifestFiles(manifest)) {
    const m = ASSET_NAME.exec(rel);
    if (!m) throw new Error(`dashboard manifest names a file outside assets/: ${JSON.stringify(rel)}`);
    assets.set(m[1]!, staticFile(rel, fs.readFileSync(path.join(distDir, rel))));
  }
  return { index: staticFile('index.html', fs.readFileSync(indexPath)), assets };
}

/** Whether an Accept-Encoding header admits gzip (a `q=0` refuses it). */
export function acceptsGzip(acceptEncoding: string): boolean {
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [coding, ...params] = part.trim().split(';');
    if (coding?.trim() !== 'gzip' && coding?.trim() !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}
