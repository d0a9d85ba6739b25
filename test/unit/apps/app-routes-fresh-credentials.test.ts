import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AuthenticatedKeyView,
  type KeyAuthenticator,
  ManagementAuthenticator,
} from '../../../src/accounts/authenticator.ts';
import type { SessionRepository } from '../../../src/accounts/session-repository.ts';
import type { UserRepository } from '../../../src/accounts/user-repository.ts';
import type { AppHost } from '../../../src/apps/app-host.ts';
import { appRoutes } from '../../../src/apps/app-routes.ts';
import { orRefreshed } from '../../../src/accounts/fresh-credentials.ts';
import { unauthorized } from '../../../src/errors/index.ts';
import { listenRoutes, patternBytes } from '../../helpers/uws-routes.ts';

/**
 * The apps API and credentials made on another replica a moment ago (fresh-credentials.ts): a key this replica does
 * not know yet is looked up again once its records caught up, and an archive uploaded with it meanwhile is held
 * (HttpExchange.holdBody), not lost: the deployment gets every byte. A key nobody made stays a 401 after the one
 * catch-up, and its upload is refused, not read into a deployment.
 */
const KNOWN_AFTER_REFRESH = `hk_fresh_${'s'.repeat(32)}`;
let refreshes = 0;
let known = false;
const deployed: Array<{ accountId: string; ws: string; appId: string; bytes: number; sha256: string }> = [];
let port: number;
let close: () => void;

beforeAll(async () => {
  // Keys as a replica's records see them: the fresh key only once a catch-up (refresh) has run.
  const attempt = (presented: string | undefined): AuthenticatedKeyView => {
    if (known && presented === KNOWN_AFTER_REFRESH)
      return {
        keyId: 'key_fresh',
        accountId: 'acct_1',
        limits: { requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null },
      } as AuthenticatedKeyView;
    throw unauthorized();
  };
  const refresh = async () => {
    refreshes++;
    await new Promise((r) => setTimeout(r, 40)); // the catch-up query; the upload keeps coming meanwhile
    known = true;
  };
  const keys: KeyAuthenticator = {
    authenticate: attempt,
    authenticateFresh: (p) => orRefreshed(() => attempt(p), refresh),
  };
  const auth = new ManagementAuthenticator(keys, {} as SessionRepository, {} as UserRepository, refresh);
  const host = {
    archiveLimit: 8 << 20,
    deployArchive: async (accountId: string, ws: string, appId: string, archive: Buffer) => {
      deployed.push({
        accountId,
        ws,
        appId,
        bytes: archive.length,
        sha256: createHash('sha256').update(archive).digest('hex'),
      });
      return { id: 'dep_1', status: 'building' };
    },
  } as unknown as AppHost;
  ({ port, close } = await listenRoutes(
    appRoutes({
      host,
      auth,
      session: { publicUrl: undefined, trustProxy: false, maxAgeMs: 60_000 },
      bodyLimit: 1 << 20,
      keepAliveMs: 15_000,
    }),
  ));
});
afterAll(() => close());

/** Archive bytes (not a real archive: the host here only counts them). */
const archive = (size: number) => patternBytes(size, 7);

const deploy = (key: string, body: Buffer) =>
  fetch(`http://127.0.0.1:${port}/api/v1/workspaces/ws_1/apps/app_1/deployments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/gzip' },
    body,
  });

describe('apps API with credentials a moment old on another replica', () => {
  it('a key unknown until the records catch up deploys, and the archive uploaded meanwhile arrives whole', async () => {
    const body = archive(2 << 20);
    const r = await deploy(KNOWN_AFTER_REFRESH, body);
    expect(r.status).toBe(202);
    expect(refreshes).toBe(1);
    expect(deployed).toEqual([
      {
        accountId: 'acct_1',
        ws: 'ws_1',
        appId: 'app_1',
        bytes: body.length,
        sha256: createHash('sha256').update(body).digest('hex'),
      },
    ]);
  });

  it('a key nobody made is a 401 after one catch-up, and its upload is not deployed', async () => {
    const r = await deploy(`hk_nobody_${'n'.repeat(32)}`, archive(1 << 20));
    expect(r.status).toBe(401);
    expect(refreshes).toBe(2);
    expect(deployed).toHaveLength(1);
  });

  it('no credential, or a malformed key, is a 401 at once: no catch-up for what could not exist anywhere', async () => {
    for (const key of ['', 'not-a-key', 'hk_short_x']) {
      const r = await deploy(key, archive(65_536));
      expect(r.status, key).toBe(401);
    }
    expect(refreshes).toBe(2);
    expect(deployed).toHaveLength(1);
  });
});
