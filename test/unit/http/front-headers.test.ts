import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EdgeStyle, FRONT_HEADERS } from '../../../src/http/http-exchange.ts';
import { OPENAI_STYLE } from '../../../src/http/router.ts';
import { listenRoutes } from '../../helpers/uws-routes.ts';

/**
 * Behind the managed front (EdgeStyle.frontSecret) the client address comes from x-hearth-peer, but only next to
 * the right x-hearth-front secret; both headers are removed from the request whatever they say.
 */
const SECRET = 'a'.repeat(64);
const STYLE: EdgeStyle = { ...OPENAI_STYLE, frontSecret: Buffer.from(SECRET) };
let port: number;
let close: () => void;

beforeAll(async () => {
  ({ port, close } = await listenRoutes(
    [
      {
        method: 'GET',
        pattern: '/who',
        name: 'who',
        handler: (ex) =>
          ex.sendJson(200, {
            address: ex.remoteAddress(),
            headers: ex.headerList.map(([k]) => k),
            head: ex.requestHead().headers.map(([k]) => k),
          }),
      },
    ],
    STYLE,
  ));
});
afterAll(() => close());

async function who(headers: Record<string, string>): Promise<{ address: string; headers: string[]; head: string[] }> {
  return (await fetch(`http://127.0.0.1:${port}/who`, { headers })).json() as Promise<{
    address: string;
    headers: string[];
    head: string[];
  }>;
}

describe("the managed front's headers", () => {
  it('with the right secret, the peer header is the client address', async () => {
    const r = await who({ [FRONT_HEADERS.secret]: SECRET, [FRONT_HEADERS.peer]: '203.0.113.7' });
    expect(r.address).toBe('203.0.113.7');
  });

  it('without it (a local process bypassing the front), the socket address counts', async () => {
    for (const secret of [undefined, 'b'.repeat(64), 'a'.repeat(63), `${SECRET}a`]) {
      const r = await who({
        ...(secret === undefined ? {} : { [FRONT_HEADERS.secret]: secret }),
        [FRONT_HEADERS.peer]: '203.0.113.7',
      });
      expect(r.address, String(secret)).toBe('127.0.0.1');
    }
  });

  it('an over-long peer value is not believed', async () => {
    const r = await who({ [FRONT_HEADERS.secret]: SECRET, [FRONT_HEADERS.peer]: '1'.repeat(46) });
    expect(r.address).toBe('127.0.0.1');
  });

  it('neither header is visible to handlers or forwarded (apps never see the secret)', async () => {
    const r = await who({ [FRONT_HEADERS.secret]: SECRET, [FRONT_HEADERS.peer]: '203.0.113.7', 'x-other': '1' });
    for (const list of [r.headers, r.head]) {
      expect(list).toContain('x-other');
      expect(list).not.toContain(FRONT_HEADERS.secret);
      expect(list).not.toContain(FRONT_HEADERS.peer);
    }
  });
});
