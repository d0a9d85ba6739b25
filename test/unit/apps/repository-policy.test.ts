import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appHostOptionsFrom } from '../../../src/apps/app-host-config.ts';
import { DeploymentFailure, fetchRepository } from '../../../src/apps/deployment-builder.ts';
import {
  decideRepository,
  nonPublicReason,
  pinnedResolve,
  type RepositoryDecision,
  type Resolver,
} from '../../../src/apps/repository-policy.ts';
import { ConfigError, parseServeConfig } from '../../../src/config/config.ts';
import { type DumbGitServer, serveDumbGit } from '../../helpers/dumb-git-server.ts';

/** A resolver that answers `addresses` for every name and records what it was asked. */
function fixedResolver(addresses: string[]): Resolver & { asked: string[] } {
  const asked: string[] = [];
  return Object.assign(
    async (host: string) => {
      asked.push(host);
      return addresses;
    },
    { asked },
  );
}

/** The `-c name=value` arguments git takes for each of `settings`, in order. */
const gitConfig = (...settings: string[]): string[] => settings.flatMap((setting) => ['-c', setting]);
/** Every permit starts by allowing no transport but http(s). */
const HTTP_ONLY = ['protocol.allow=never', 'protocol.https.allow=always', 'protocol.http.allow=always'];

const PUBLIC_V4 = '93.184.216.34';
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946';

describe('the --app-repositories setting', () => {
  it('defaults to public and reaches the app host; an unknown mode is a configuration error', () => {
    expect(appHostOptionsFrom(parseServeConfig([], {})).repositories).toBe('public');
    expect(appHostOptionsFrom(parseServeConfig(['--app-repositories', 'local'], {})).repositories).toBe('local');
    expect(appHostOptionsFrom(parseServeConfig([], { HEARTH_APP_REPOSITORIES: 'network' })).repositories).toBe(
      'network',
    );
    expect(() => parseServeConfig(['--app-repositories', 'any'], {})).toThrow(ConfigError);
  });
});

describe('the address classifier', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '0.1.2.3',
    '100.64.0.1',
    '100.127.255.255',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '192.0.2.1',
    '198.18.0.1',
    '203.0.113.9',
    '::',
    '::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '::ffff:10.0.0.1',
    '::127.0.0.1',
    '::a00:1',
    '64:ff9b::7f00:1',
    '2001:db8::1',
    '2002:7f00:1::1',
    '2001::1',
    '100::1',
    '3fff::1',
  ])('%s is not public', (address) => {
    expect(nonPublicReason(address)).not.toBeNull();
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    PUBLIC_V4,
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.169.0.1',
    '223.255.255.255',
    PUBLIC_V6,
    '2a00:1450:4001::200e',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '3fff:1000::1',
  ])('%s is public', (address) => {
    expect(nonPublicReason(address)).toBeNull();
  });

  it('names what an address is', () => {
    expect(nonPublicReason('127.0.0.1')).toBe('a loopback address');
    expect(nonPublicReason('::ffff:192.168.0.1')).toBe('a private address');
    expect(nonPublicReason('fe80::1')).toBe('a link-local address');
    expect(nonPublicReason('100.64.1.1')).toBe('a shared (CGNAT) address');
    expect(nonPublicReason('not-an-address')).toBe('not an IP address');
  });
});

function refusedReason(d: RepositoryDecision): string {
  if (d.kind !== 'refused') throw new Error(`expected a refusal, got ${JSON.stringify(d)}`);
  return d.reason;
}

describe('--app-repositories public (the default)', () => {
  it.each([
    'http://127.0.0.1/x.git',
    'http://2130706433/x.git',
    'http://0x7f.1/x.git',
    'http://0177.0.0.1/x.git',
    'http://127.1:8080/x.git',
    'http://0/x.git',
    'http://[::ffff:127.0.0.1]/x.git',
    'http://[::1]:9418/x.git',
    'http://[::127.0.0.1]/x.git',
    'http://[fe80::1]/x.git',
    'http://[fc00::1]/x.git',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::ffff:a9fe:a9fe]/',
    'https://10.1.2.3/x.git',
    'https://172.16.5.4/x.git',
    'https://192.168.0.10/x.git',
    'https://100.64.0.1/x.git',
    'http://0.0.0.0:8080/',
    'http://224.0.0.1/',
    'https://user:secret@127.0.0.1/x.git',
    'http://127.0.0.%31/x.git',
    'http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/x.git',
    'http://127.0.0.1./x.git',
    'http://[0:0:0:0:0:ffff:7f00:0001]/x.git',
  ])('%s: refused without a lookup, naming the flag', async (url) => {
    const resolve = fixedResolver([PUBLIC_V4]);
    const reason = refusedReason(await decideRepository(url, 'public', resolve));
    expect(reason).toContain('--app-repositories');
    expect(reason).toMatch(/is an? [a-z-]+/);
    expect(reason).not.toContain('secret');
    expect(resolve.asked).toEqual([]);
  });

  it.each([
    ['file:///srv/repo.git', 'file:// URLs are'],
    ['FILE://localhost/srv/repo.git', 'file:// URLs are'],
    ['/srv/repo.git', 'a local path is'],
    ['./repo', 'a local path is'],
    ['git@github.com:a/b.git', 'a user@host:path address is'],
    ['ssh://git@github.com/a/b.git', 'ssh:// URLs are'],
    ['git://github.com/a/b.git', 'git:// URLs are'],
    ['ftp://example.com/a.git', 'ftp:// URLs are'],
    ['http://exa mple.com/a.git', 'a URL that does not parse is'],
  ])('%s: refused (%s not allowed)', async (url, what) => {
    const reason = refusedReason(await decideRepository(url, 'public', fixedResolver([PUBLIC_V4])));
    expect(reason).toBe(
      `${what} not allowed: only http:// and https:// URLs of public hosts are (the default --app-repositories public)`,
    );
  });

  it('a name that resolves to loopback (localhost, the real resolver) is refused', async () => {
    expect(refusedReason(await decideRepository('http://localhost:8080/x.git', 'public'))).toBe(
      "'localhost' resolves to an address that is not public: only http:// and https:// URLs of public hosts are (the default --app-repositories public)",
    );
  });

  it('a name with one private address among public ones is refused, and the answer does not say which address', async () => {
    const reason = refusedReason(
      await decideRepository('https://git.example.com/a.git', 'public', fixedResolver([PUBLIC_V4, '10.20.30.40'])),
    );
    expect(reason).not.toContain('10.20.30.40');
    expect(
      refusedReason(
        await decideRepository(
          'https://git.example.com/a.git',
          'public',
          fixedResolver([PUBLIC_V6, '::ffff:192.168.1.1']),
        ),
      ),
    ).toContain('not public');
  });

  it('a name that does not resolve is unreachable, not refused', async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    expect(await decideRepository('https://nowhere.example/a.git', 'public', failing)).toEqual({
      kind: 'unreachable',
      reason: "could not resolve host 'nowhere.example' (ENOTFOUND)",
    });
  });

  it('pins git to exactly the addresses the check saw, for the URL it hands git, with no redirects and only http(s)', async () => {
    const resolve = fixedResolver([PUBLIC_V4, PUBLIC_V6]);
    const d = await decideRepository('https://bob:tok@Git.Example.COM/team/app.git', 'public', resolve);
    expect(resolve.asked).toEqual(['git.example.com']);
    expect(d).toEqual({
      kind: 'allowed',
      url: 'https://bob:tok@git.example.com/team/app.git',
      gitArgs: gitConfig(
        ...HTTP_ONLY,
        'http.followRedirects=false',
        `http.curloptResolve=git.example.com:443:${PUBLIC_V4},[${PUBLIC_V6}]`,
        `http.curloptResolve=git.example.com.:443:${PUBLIC_V4},[${PUBLIC_V6}]`,
      ),
    });
    const plain = await decideRepository('http://git.example.com/a.git', 'public', fixedResolver([PUBLIC_V4]));
    expect(plain.kind === 'allowed' && plain.gitArgs.filter((a) => a.startsWith('http.curloptResolve'))).toEqual([
      `http.curloptResolve=git.example.com:80:${PUBLIC_V4}`,
      `http.curloptResolve=git.example.com.:80:${PUBLIC_V4}`,
    ]);
    const port = await decideRepository('https://git.example.com.:8443/a.git', 'public', fixedResolver([PUBLIC_V4]));
    expect(port.kind === 'allowed' && port.gitArgs.filter((a) => a.startsWith('http.curloptResolve'))).toEqual([
      `http.curloptResolve=git.example.com.:8443:${PUBLIC_V4}`,
      `http.curloptResolve=git.example.com:8443:${PUBLIC_V4}`,
    ]);
  });

  it('hands git the parsed URL, so git connects to the host that was checked', async () => {
    const d = await decideRepository('http://git.example.com\\@127.0.0.1/a.git', 'public', fixedResolver([PUBLIC_V4]));
    expect(d.kind === 'allowed' && d.url).toBe('http://git.example.com/@127.0.0.1/a.git');
    const literal = await decideRepository('https://8.8.8.8/a.git', 'public', fixedResolver([]));
    expect(literal).toEqual({
      kind: 'allowed',
      url: 'https://8.8.8.8/a.git',
      gitArgs: gitConfig(...HTTP_ONLY, 'http.followRedirects=false'),
    });
  });
});

describe('--app-repositories network and local', () => {
  it('network: http(s), ssh:// and git:// to any address; no file:// or local path', async () => {
    for (const url of [
      'http://127.0.0.1:8080/x.git',
      'ssh://git@10.0.0.5/x.git',
      'git://192.168.1.2/x.git',
      'https://localhost/x.git',
    ]) {
      const d = await decideRepository(url, 'network', fixedResolver([]));
      expect(d.kind, url).toBe('allowed');
      expect(d.kind === 'allowed' && d.gitArgs).toEqual(
        gitConfig(...HTTP_ONLY, 'protocol.ssh.allow=always', 'protocol.git.allow=always'),
      );
    }
    for (const url of ['file:///srv/x.git', '/srv/x.git', 'ftp://h/x'])
      expect(refusedReason(await decideRepository(url, 'network', fixedResolver([])))).toContain(
        '(--app-repositories network)',
      );
  });

  it('local: anything (the caller has already refused options and command transports)', async () => {
    expect(await decideRepository('/srv/x.git', 'local', fixedResolver([]))).toMatchObject({
      kind: 'allowed',
      url: '/srv/x.git',
    });
    expect(await decideRepository('file:///srv/x.git', 'local', fixedResolver([]))).toMatchObject({
      kind: 'allowed',
      url: 'file:///srv/x.git',
    });
  });
});

/** A dumb-protocol git repository over http on 127.0.0.1 (static files; `/moved/...` redirects to it). */
describe('git under the permit (real git, a local http repository)', () => {
  let server: DumbGitServer;
  let port: number;
  let root: string;

  const run = (args: string[]) =>
    new Promise<{ ok: boolean; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'git',
        args,
        {
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: '/nonexistent',
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_TERMINAL_PROMPT: '0',
          },
          timeout: 20_000,
        },
        (err, stdout, stderr) => resolve({ ok: err === null, stdout, stderr }),
      );
    });
  /** The permit of a public host, its pin moved to the local server (what a public name resolving to it would give). */
  async function permitTo(host: string): Promise<{ url: string; gitArgs: string[] }> {
    const d = await decideRepository(`http://${host}:${port}/repo.git`, 'public', fixedResolver([PUBLIC_V4]));
    if (d.kind !== 'allowed') throw new Error('expected a permit');
    const unpinned = d.gitArgs.filter(
      (a, i, all) => !a.startsWith('http.curloptResolve') && !all[i + 1]?.startsWith('http.curloptResolve'),
    );
    return { url: d.url, gitArgs: [...unpinned, ...pinnedResolve(host, port, ['127.0.0.1'])] };
  }

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-dumb-http-'));
    const git = (cwd: string, ...args: string[]) =>
      execFileSync(
        'git',
        ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args],
        { cwd, stdio: 'pipe' },
      );
    const work = path.join(root, 'work');
    fs.mkdirSync(work);
    fs.writeFileSync(path.join(work, 'Procfile'), 'web: node server.js\n');
    git(work, 'init', '--quiet');
    git(work, 'add', '.');
    git(work, 'commit', '--quiet', '-m', 'x');
    git(root, 'clone', '--quiet', '--bare', work, 'repo.git');
    server = await serveDumbGit(path.join(root, 'repo.git'));
    port = server.port;
  });

  afterAll(async () => {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('git connects to the pinned address, not to what the name would resolve to', async () => {
    const permit = await permitTo('hearth-pinned.invalid');
    const pinned = await run([...permit.gitArgs, 'ls-remote', '--', permit.url, 'HEAD']);
    expect(pinned.stderr).toBe('');
    expect(pinned.stdout).toMatch(/^[0-9a-f]{40}\tHEAD$/m);
    const before = server.connections();
    const unpinned = await run(['ls-remote', '--', permit.url, 'HEAD']);
    expect(unpinned.ok).toBe(false);
    expect(unpinned.stderr).toContain('Could not resolve host');
    expect(server.connections()).toBe(before);
  });

  it('a redirect is an error under the permit', async () => {
    const permit = await permitTo('hearth-pinned.invalid');
    const moved = permit.url.replace('/repo.git', '/moved');
    // git's own default follows it (the server's redirect works)...
    expect((await run(['ls-remote', '--', moved.replace('hearth-pinned.invalid', '127.0.0.1'), 'HEAD'])).ok).toBe(true);
    const refused = await run([...permit.gitArgs, 'ls-remote', '--', moved, 'HEAD']);
    expect(refused.ok).toBe(false);
    expect(refused.stderr).toContain('returned error: 302');
  });

  it('the permit of an http URL lets git use no local transport', async () => {
    const permit = await permitTo('hearth-pinned.invalid');
    for (const local of [`file://${path.join(root, 'repo.git')}`, path.join(root, 'repo.git')]) {
      const r = await run([...permit.gitArgs, 'ls-remote', '--', local, 'HEAD']);
      expect(r.ok, local).toBe(false);
      expect(r.stderr).toContain("transport 'file' not allowed");
    }
  });

  it('the clone step judges the URL again: a name that now resolves to loopback is refused before git runs', async () => {
    const dest = path.join(root, 'clone-dest');
    const before = server.connections();
    const log: string[] = [];
    const fetched = fetchRepository(
      `http://rebound.example:${port}/repo.git`,
      'public',
      null,
      dest,
      20_000,
      (l) => log.push(l),
      undefined,
      fixedResolver(['127.0.0.1']),
    );
    await expect(fetched).rejects.toThrow(DeploymentFailure);
    await expect(fetched).rejects.toThrow(
      "build_failed: repository not allowed: 'rebound.example' resolves to an address that is not public",
    );
    expect(fs.existsSync(dest)).toBe(false);
    expect(server.connections()).toBe(before);
  });
});
