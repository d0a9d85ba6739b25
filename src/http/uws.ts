/**
 * The uWebSockets.js build this process uses: the one module that loads uWS (everything else imports `uWS`
 * from here, and types from 'uWebSockets.js'). Loaded once, at import, on the main thread; the value is the
 * native module itself and lives as long as the process.
 *
 * Two pinned builds from the npm registry (docs/runtimes.md records where their binaries come from):
 * - `uWebSockets.js` = @btc-vision/uwebsockets.js 20.57.0: Node ABIs 115/127/137/141, needs glibc >= 2.38.
 *   The build for every supported runtime where it loads (Node 22 and 24 on Debian 13, Ubuntu 24.04+).
 * - `uws-legacy-node20` = @trufflesuite/uws-js-unofficial 20.30.0-unofficial.0: ABI 115 (Node 20), glibc 2.27.
 *   Only for Node 20 where the new build cannot load (glibc < 2.38, e.g. Debian 12). Its own JS fallback,
 *   which fails at the first request, is never reached: it is loaded only for ABI 115, which it ships.
 * runtime-support.ts decides first whether this runtime is supported at all; importing this module on an
 * unsupported one throws.
 */
import { createRequire } from 'node:module';
import type * as UwsModule from 'uWebSockets.js';

export type UwsBuild = 'btc-vision-20.57.0' | 'trufflesuite-20.30.0-node20';

/** The Node ABI (process.versions.modules) of the one runtime the legacy build is used on: Node 20. */
export const LEGACY_ABI = '115';

export interface LoadedUws {
  uWS: typeof UwsModule;
  build: UwsBuild;
}

/**
 * The head (request line and headers) uWS takes, for the btc-vision build: its default is 4 KiB, read from
 * UWS_HTTP_MAX_HEADERS_SIZE when the library loads. Hearth serves a 16 KiB head (the front's 431 rule) plus the
 * headers the front adds; the legacy build has no such setting.
 */
export const UWS_MAX_HEAD_BYTES = 16_384 + 1_024;

/** Loads the build for this process; throws an Error naming why each candidate did not load. */
export function loadUws(): LoadedUws {
  const require = createRequire(import.meta.url);
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(UWS_MAX_HEAD_BYTES);
  try {
    return { uWS: require('uWebSockets.js') as typeof UwsModule, build: 'btc-vision-20.57.0' };
  } catch (err) {
    const why = err instanceof Error ? (err.message.split('\n').filter(Boolean).pop() ?? err.message) : String(err);
    if (process.versions.modules !== LEGACY_ABI || process.platform !== 'linux')
      throw new Error(`uWebSockets.js does not load: ${why}`);
    return { uWS: require('uws-legacy-node20') as typeof UwsModule, build: 'trufflesuite-20.30.0-node20' };
  }
}

const loaded = loadUws();
/** The uWS module (App, us_listen_socket_close, ...). */
export const uWS = loaded.uWS;
/**
 * Whether uWS's idle time-out (10 s) closes a connection whose answer went out while its request body was still
 * declared to come: the legacy build does; 20.57 keeps such a connection open as long as the client does, so
 * Hearth closes those connections itself after a lingering read of the body (http-exchange.ts, answerThenLinger).
 */
export const uwsClosesAnsweredIdle = loaded.build === 'trufflesuite-20.30.0-node20';
/** Which pinned build `uWS` is: the HTTP edge tests assert each build's own behaviour where they differ. */
export const uwsBuild: UwsBuild = loaded.build;
