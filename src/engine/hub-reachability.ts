import dns from 'node:dns/promises';
import net from 'node:net';

/**
 * Where a hub pull goes: node-llama-cpp's endpoint rule (MODEL_ENDPOINT, then HF_ENDPOINT, else huggingface.co),
 * as a host and port. Read on the thread that pulls, from its environment.
 */
export function hubEndpoint(env: NodeJS.ProcessEnv = process.env): { host: string; port: number } {
  const raw =
    [env.MODEL_ENDPOINT, env.HF_ENDPOINT].find((v) => v !== undefined && /^https?:\/\//.test(v)) ??
    'https://huggingface.co/';
  const url = new URL(raw);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host, port: url.port ? Number(url.port) : url.protocol === 'http:' ? 80 : 443 };
}

/** How the check reaches the network; tests hand in their own. */
export interface HubProbe {
  /** Resolves the host name (the system resolver, as the downloader's); rejects with the resolver's code. */
  lookup(host: string): Promise<void>;
  /** Opens and closes a TCP connection to the host (every address it resolves to, happy-eyeballs style). */
  connect(host: string, port: number, timeoutMs: number): Promise<void>;
}

const systemProbe: HubProbe = {
  lookup: async (host) => {
    await dns.lookup(host, { all: true });
  },
  connect: (host, port, timeoutMs) =>
    new Promise<void>((resolve, reject) => {
      const socket = net.connect({ host, port, autoSelectFamily: true });
      const timer = setTimeout(
        () => socket.destroy(Object.assign(new Error(`no answer in ${timeoutMs / 1000} s`), { code: 'ETIMEDOUT' })),
        timeoutMs,
      );
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.destroy();
        resolve();
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    }),
};

/** Proxy variables: with one set the hub is reached through it, so a direct check would say nothing. */
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy'];

/**
 * Checks, before a pull starts, that the hub's host resolves and accepts a TCP connection, so an offline
 * machine fails at once with the reason instead of after the downloader's retries and the stall time-out.
 * Resolves with null when the host is reachable (or a proxy is configured), else with one sentence saying
 * which host could not be resolved or reached and why (`cannot resolve host huggingface.co (ENOTFOUND)`).
 */
export async function hubUnreachableReason(
  endpoint: { host: string; port: number },
  o: { env?: NodeJS.ProcessEnv; probe?: HubProbe; timeoutMs?: number } = {},
): Promise<string | null> {
  const env = o.env ?? process.env;
  if (PROXY_VARIABLES.some((v) => env[v])) return null;
  const probe = o.probe ?? systemProbe;
  try {
    if (!net.isIP(endpoint.host)) await probe.lookup(endpoint.host);
  } catch (err) {
    return `cannot resolve host ${endpoint.host} (${codeOf(err)}): no network or DNS`;
  }
  try {
    await probe.connect(endpoint.host, endpoint.port, o.timeoutMs ?? 10_000);
  } catch (err) {
    return `cannot reach ${endpoint.host}:${endpoint.port} (${codeOf(err)})`;
  }
  return null;
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.message : String(err);
}
