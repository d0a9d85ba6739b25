import dns from 'node:dns';
import net from 'node:net';

/**
 * Which repositories a deployment may make Hearth's host fetch (`--app-repositories`), and the git options
 * that hold git to that decision. Any workspace member names the URL and git runs as Hearth, outside the
 * sandbox, so the default (`public`) lets git reach nothing but public hosts over http(s):
 * - `public`: `https://` and `http://` URLs whose host is, or resolves only to, public unicast addresses.
 *   git gets the URL as parsed here (the host checked is the host git connects to), is pinned to the
 *   checked addresses (`http.curloptResolve`: no second lookup that could rebind), follows no redirect (nor
 *   dumb-http alternates, which git ties to http.followRedirects), and may use no other transport.
 * - `network`: http(s), `ssh://` and `git://` to any address (a git server on the LAN); no local repository.
 * - `local`: whatever git clones, `file://` and local paths included (development, the test suite).
 * Checked before the 202 and again when the queued deployment clones (names may resolve otherwise by then).
 */
export type RepositoryAccess = 'public' | 'network' | 'local';

/** Every address a host name resolves to (getaddrinfo, like git's libcurl). */
export type Resolver = (host: string) => Promise<string[]>;

export const systemResolver: Resolver = async (host) =>
  (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** A repository git may fetch: the URL to hand it and the options that confine it. */
export interface RepositoryPermit {
  kind: 'allowed';
  url: string;
  gitArgs: string[];
}

export type RepositoryDecision =
  RepositoryPermit | { kind: 'refused'; reason: string } | { kind: 'unreachable'; reason: string };

const RESOLVE_TIMEOUT_MS = 10_000;
const ONLY = (...protocols: string[]) => [
  '-c',
  'protocol.allow=never',
  ...protocols.flatMap((p) => ['-c', `protocol.${p}.allow=always`]),
];
const LOCAL_ARGS = [
  '-c',
  'protocol.file.allow=always',
  '-c',
  'protocol.ext.allow=never',
  '-c',
  'protocol.fd.allow=never',
];
const SCHEMES: Record<Exclude<RepositoryAccess, 'local'>, readonly string[]> = {
  public: ['https', 'http'],
  network: ['https', 'http', 'ssh', 'git'],
};
const WHAT: Record<Exclude<RepositoryAccess, 'local'>, string> = {
  public: 'only http:// and https:// URLs of public hosts are (the default --app-repositories public)',
  network: 'only http://, https://, ssh:// and git:// URLs are (--app-repositories network)',
};

/** Whether `raw` (already free of options and command transports) may be fetched under `access`, and how. */
export async function decideRepository(
  raw: string,
  access: RepositoryAccess,
  resolve: Resolver = systemResolver,
): Promise<RepositoryDecision> {
  if (access === 'local') return { kind: 'allowed', url: raw, gitArgs: LOCAL_ARGS };
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw);
  const url = hasScheme && URL.canParse(raw) ? new URL(raw) : null;
  const scheme = url?.protocol.slice(0, -1) ?? '';
  if (url === null || !SCHEMES[access].includes(scheme) || url.hostname === '') {
    const what = !hasScheme
      ? /^[^/]*:/.test(raw)
        ? 'a user@host:path address is'
        : 'a local path is'
      : url === null
        ? 'a URL that does not parse is'
        : !SCHEMES[access].includes(scheme)
          ? `${scheme}:// URLs are`
          : 'a URL without a host is';
    return refused(`${what} not allowed: ${WHAT[access]}`);
  }
  if (access === 'network') return { kind: 'allowed', url: url.href, gitArgs: ONLY(...SCHEMES.network) };
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (net.isIP(host) !== 0) {
    const why = nonPublicReason(host);
    return why === null
      ? { kind: 'allowed', url: url.href, gitArgs: publicArgs([]) }
      : refused(`${host} is ${why}: ${WHAT.public}`);
  }
  let addresses: string[];
  try {
    addresses = await withTimeout(resolve(host), RESOLVE_TIMEOUT_MS);
  } catch (err) {
    return {
      kind: 'unreachable',
      reason: `could not resolve host '${host}' (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    };
  }
  if (addresses.length === 0) return { kind: 'unreachable', reason: `could not resolve host '${host}'` };
  // The addresses themselves stay unsaid: the answer must not map a private network.
  if (addresses.some((a) => nonPublicReason(a) !== null))
    return refused(`'${host}' resolves to an address that is not public: ${WHAT.public}`);
  const port = url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port);
  return { kind: 'allowed', url: url.href, gitArgs: publicArgs(pinnedResolve(host, port, addresses)) };
}

/** The `http.curloptResolve` entries that make libcurl connect `host:port` to `addresses` and nothing else. */
export function pinnedResolve(host: string, port: number, addresses: readonly string[]): string[] {
  const list = addresses.map((a) => (net.isIPv6(a) ? `[${a}]` : a)).join(',');
  // libcurl keys its cache on the name as written; a trailing dot is a second spelling of the same name.
  const names = host.endsWith('.') ? [host, host.slice(0, -1)] : [host, `${host}.`];
  return names.flatMap((name) => ['-c', `http.curloptResolve=${name}:${port}:${list}`]);
}

function publicArgs(pins: string[]): string[] {
  return [...ONLY(...SCHEMES.public), '-c', 'http.followRedirects=false', ...pins];
}

function refused(reason: string): RepositoryDecision {
  return { kind: 'refused', reason };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

const V4_NOT_PUBLIC: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'an unspecified ("this network") address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'a reserved address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a reserved address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a reserved (benchmarking) address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

/**
 * Null when `address` (an IPv4 or IPv6 literal) is public unicast, else what it is. IPv6 is public only
 * inside 2000::/3 outside its documentation, 6to4 and IETF-assignment (Teredo ...) blocks; an IPv4-mapped
 * (::ffff:a.b.c.d) or -compatible (::a.b.c.d) address is judged by its IPv4 address.
 */
export function nonPublicReason(address: string): string | null {
  if (net.isIPv4(address)) {
    const n = v4Number(address);
    for (const [base, bits, what] of V4_NOT_PUBLIC)
      if (n >>> (32 - bits) === v4Number(base) >>> (32 - bits)) return what;
    return null;
  }
  const g = net.isIPv6(address) ? v6Groups(address) : null;
  if (g === null) return 'not an IP address';
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || (g[5] === 0 && (g[6] !== 0 || g[7]! > 1)))) {
    return nonPublicReason(`${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`);
  }
  if (g.every((x) => x === 0)) return 'an unspecified address';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'a loopback address';
  if ((g[0]! & 0xfe00) === 0xfc00) return 'a unique-local address';
  if ((g[0]! & 0xffc0) === 0xfe80) return 'a link-local address';
  if ((g[0]! & 0xff00) === 0xff00) return 'a multicast address';
  if ((g[0]! & 0xe000) !== 0x2000) return 'a reserved address';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'a documentation address';
  if (g[0] === 0x2002 || (g[0] === 0x2001 && g[1]! < 0x200) || (g[0] === 0x3fff && g[1]! < 0x1000))
    return 'a reserved address';
  return null;
}

function v4Number(a: string): number {
  return a.split('.').reduce((n, part) => n * 256 + Number(part), 0) >>> 0;
}

/** The eight 16-bit groups of a valid IPv6 literal (zone id dropped, dotted tail converted). */
function v6Groups(address: string): number[] {
  let a = address.split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const n = v4Number(dotted[1]!);
    a = `${a.slice(0, -dotted[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const parse = (s: string | undefined) => (s ? s.split(':').map((x) => parseInt(x, 16)) : []);
  const h = parse(head);
  const t = parse(tail);
  return tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
}
