import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard build: web/ -> web/dist (index.html + hashed files under assets/ + .vite/manifest.json).
// No inline scripts or styles (the server's Content-Security-Policy forbids them), no module preload
// polyfill (it is an inline script), nothing from a CDN.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    manifest: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    reportCompressedSize: false,
  },
});
