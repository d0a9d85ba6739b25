/**
 * Which runtimes `hearth serve` runs on (contract: "Runtimes and the image"), decided once at start, before
 * uWebSockets.js or a model is loaded. On any other runtime `hearth serve` exits 2 with `refusal()`'s one
 * line; there is no fallback that would fail at the first request. Pure except `currentRuntime()`.
 *
 * Supported: Node.js 22 and 24 LTS on Linux x64 with glibc >= 2.38 (the @btc-vision uWS build), and Node.js
 * 20.12+ (end of life since April 2026, kept while it costs nothing) on Linux x64 with glibc >= 2.27 (the
 * legacy build where the new one cannot load). Node 26's ABI (147) has no uWS build on the npm registry yet.
 */

export interface Runtime {
  /** process.version, e.g. "v24.21.0". */
  node: string;
  /** process.versions.modules, the native addon ABI, e.g. "137". */
  abi: string;
  /** glibc's runtime version, e.g. "2.41"; null where the C library is not glibc (musl) or unknown. */
  glibc: string | null;
  platform: string;
  arch: string;
}

interface SupportedLine {
  major: number;
  abi: string;
  /** Lowest minor of that major. */
  minMinor: number;
  minGlibc: [number, number];
}

const LINES: readonly SupportedLine[] = [
  { major: 24, abi: '137', minMinor: 0, minGlibc: [2, 38] },
  { major: 22, abi: '127', minMinor: 0, minGlibc: [2, 38] },
  { major: 20, abi: '115', minMinor: 12, minGlibc: [2, 27] },
];

export const SUPPORTED_TEXT =
  'Node.js 22 or 24 on Linux x64 with glibc >= 2.38 (Debian 13, Ubuntu 24.04 or later; or the hearth image), ' +
  'or Node.js 20.12+ (end of life) on Linux x64 with glibc >= 2.27';

export function currentRuntime(): Runtime {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return {
    node: process.version,
    abi: process.versions.modules,
    glibc: header?.glibcVersionRuntime ?? null,
    platform: process.platform,
    arch: process.arch,
  };
}

function parseGlibc(v: string): [number, number] | null {
  const m = /^(\d+)\.(\d+)/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

function parseNode(v: string): [number, number] | null {
  const m = /^v?(\d+)\.(\d+)\./.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** The supported line this runtime is on, or null. */
export function supportedLine(r: Runtime): SupportedLine | null {
  if (r.platform !== 'linux' || r.arch !== 'x64' || r.glibc === null) return null;
  const node = parseNode(r.node);
  const glibc = parseGlibc(r.glibc);
  if (!node || !glibc) return null;
  const line = LINES.find((l) => l.major === node[0] && l.abi === r.abi);
  if (!line || node[1] < line.minMinor) return null;
  const [gMaj, gMin] = line.minGlibc;
  if (glibc[0] < gMaj || (glibc[0] === gMaj && glibc[1] < gMin)) return null;
  return line;
}

/** The one line `hearth serve` prints before exiting 2; `why` = a loader's reason where the check passed but uWS did not load. */
export function refusal(r: Runtime, why?: string): string {
  const found = `Node.js ${r.node} (ABI ${r.abi}), ${r.glibc === null ? 'no glibc' : `glibc ${r.glibc}`}, ${r.platform} ${r.arch}`;
  return `hearth serve: unsupported runtime: ${found}${why ? ` (${why.replace(/\s+/g, ' ')})` : ''}; supported: ${SUPPORTED_TEXT}`;
}

/**
 * `hearth serve`'s start gate: null where this runtime is supported and its uWS build loads; otherwise the
 * refusal line. Loads uws.ts only after the version check passed.
 */
export async function refuseUnsupportedRuntime(r: Runtime = currentRuntime()): Promise<string | null> {
  if (!supportedLine(r)) return refusal(r);
  try {
    await import('./uws.ts');
  } catch (err) {
    return refusal(r, err instanceof Error ? err.message : String(err));
  }
  return null;
}
