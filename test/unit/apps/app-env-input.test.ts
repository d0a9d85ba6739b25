import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAppInput, parseAppPatch } from '../../../src/apps/app-input.ts';
import { runToEnd } from '../../../src/apps/app-process.ts';
import { launchPlan } from '../../../src/apps/sandbox.ts';
import { ApiError } from '../../../src/errors/index.ts';
import { testSandbox } from '../../helpers/sandbox-options.ts';

/**
 * The app env the API accepts must be one an app can be started with, and the limits the API states hold
 * for the app, not for one request: the kernel refuses to start a process whose environment passes its
 * argument limit (E2BIG at every launch, a deployment failing with `spawn E2BIG`), and PATCH adds to what
 * the app holds already.
 */
const SANDBOX = testSandbox('bwrap');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-app-env-'));
fs.chmodSync(dir, 0o755);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function refusal(run: () => unknown): ApiError {
  let err: unknown = null;
  try {
    run();
  } catch (e) {
    err = e;
  }
  expect(err, 'accepted').toBeInstanceOf(ApiError);
  expect((err as ApiError).status).toBe(400);
  return err as ApiError;
}

const values = (count: number, size: number, prefix = 'V') =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, 'x'.repeat(size)]));

describe('env names', () => {
  it("'__proto__' is refused naming it (as an object key it would be dropped, not set)", () => {
    const body = JSON.parse('{"name":"x","env":{"__proto__":"v"}}') as unknown;
    expect(refusal(() => parseAppInput(body)).param).toBe('env.__proto__');
  });
});

describe('the size of an app env', () => {
  it('100 values of 32 K characters (3.2 MB: no process can start with it) are refused with a 400 naming env', () => {
    const err = refusal(() => parseAppInput({ name: 'big', env: values(100, 32 * 1024) }));
    expect(err.param).toBe('env');
    expect(err.message).toMatch(/bytes/);
  });

  it('the largest env the API accepts starts in the sandbox', async () => {
    let env = values(1, 0);
    for (let n = 1; n <= 100; n++) {
      try {
        parseAppInput({ name: 'big', env: values(n, 32 * 1024) });
        env = values(n, 32 * 1024);
      } catch {
        break;
      }
    }
    expect(Object.keys(env).length).toBeGreaterThan(1);
    const r = await runToEnd(
      launchPlan(SANDBOX, dir, 'exit 0', {
        ...env,
        PORT: '1',
        NODE_ENV: 'production',
        HEARTH_API_KEY: `hk_${'k'.repeat(60)}`,
      }),
      20_000,
      () => {},
    );
    expect(r.error).toBeUndefined();
    expect(r.code).toBe(0);
  });

  it('PATCH counts what the app holds already: 100 held + 1 new is refused, 100 held + 1 replaced or unset is not', () => {
    const current = { env: values(100, 1), apiKeyEnv: null };
    expect(refusal(() => parseAppPatch({ env: { NEW: 'x' } }, current)).param).toBe('env');
    expect(parseAppPatch({ env: { V0: 'changed' } }, current).env).toEqual({ V0: 'changed' });
    expect(parseAppPatch({ env: { V0: null, NEW: 'x' } }, current).env).toEqual({ V0: null, NEW: 'x' });
  });

  it('PATCH counts the bytes the app holds already', () => {
    const current = { env: values(30, 32 * 1024), apiKeyEnv: null };
    expect(refusal(() => parseAppPatch({ env: values(30, 32 * 1024, 'W') }, current)).param).toBe('env');
    expect(
      parseAppPatch(
        {
          env: { ...values(30, 32 * 1024, 'W'), ...Object.fromEntries(Object.keys(current.env).map((k) => [k, null])) },
        },
        current,
      ).env,
    ).toBeDefined();
  });
});

describe("an env variable and the app's key variable", () => {
  it('PATCH env may not set the variable the app key goes to (POST refuses the same)', () => {
    expect(
      refusal(() => parseAppInput({ name: 'a', env: { HEARTH_API_KEY: 'mine' }, apiKeyEnv: 'HEARTH_API_KEY' })).param,
    ).toBe('apiKeyEnv');
    expect(
      refusal(() => parseAppPatch({ env: { HEARTH_API_KEY: 'mine' } }, { env: {}, apiKeyEnv: 'HEARTH_API_KEY' })).param,
    ).toBe('env.HEARTH_API_KEY');
    expect(
      parseAppPatch({ env: { HEARTH_API_KEY: 'mine' }, apiKeyEnv: null }, { env: {}, apiKeyEnv: 'HEARTH_API_KEY' }).env,
    ).toEqual({ HEARTH_API_KEY: 'mine' });
    expect(parseAppPatch({ env: { HEARTH_API_KEY: 'mine' } }, { env: {}, apiKeyEnv: null }).env).toEqual({
      HEARTH_API_KEY: 'mine',
    });
  });
});
