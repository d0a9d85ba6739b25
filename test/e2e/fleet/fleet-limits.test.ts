import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { FleetKeyLimiter } from '../../../src/limits/fleet-key-limiter.ts';
import { FleetLeases } from '../../../src/limits/fleet-leases.ts';
import { FleetSignInLimiter } from '../../../src/limits/fleet-sign-in-limiter.ts';
import type { KeyAdmission } from '../../../src/limits/key-limiter.ts';
import type { SignInGate } from '../../../src/limits/sign-in-limiter.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { migrate } from '../../../src/store/postgres/migrations.ts';
import type { KeyLimits } from '../../../src/store/database.ts';
import { postgresBinDir, usePostgres } from '../../helpers/postgres.ts';

/**
 * Per-key limits and the sign-in limiter counted for the whole fleet (docs/fleet.md "Limits across the fleet"):
 * three "replicas" (a FleetLeases, FleetKeyLimiter and FleetSignInLimiter each, with a pool of their own) on one
 * real PostgreSQL, migrated as `hearth serve` does. Requests sent to all three at once: together they admit exactly
 * a key's requests per minute and concurrency; a replica that stops renewing its leases (as one killed with SIGKILL
 * does) gives its concurrency back when they expire; a key without limits makes no database call.
 */
const log = createLogger('error');
const NONE: KeyLimits = { requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null };
const limits = (l: Partial<KeyLimits>): KeyLimits => ({ ...NONE, ...l });
const available = postgresBinDir() !== undefined;

interface Replica {
  pool: pg.Pool;
  leases: FleetLeases;
  keys: FleetKeyLimiter;
  signIns: FleetSignInLimiter;
}

describe.skipIf(!available)('fleet-wide limits in PostgreSQL', () => {
  const pgServer = usePostgres();
  let url: string;
  const replicas: Replica[] = [];
  const replica = (o: { ttlMs?: number; renewMs?: number } = {}): Replica => {
    const pool = new pg.Pool({ connectionString: url, max: 8 });
    pool.on('error', () => {}); // an idle connection closed by the server at the end: not a test failure
    const leases = new FleetLeases(pool, log, { sweepMs: 0, ...o });
    const r = { pool, leases, keys: new FleetKeyLimiter(leases, log), signIns: new FleetSignInLimiter(leases, log) };
    replicas.push(r);
    return r;
  };
  let n = 0;
  const keyId = () => `key_${++n}`;

  beforeAll(async () => {
    url = await pgServer.server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await migrate(client);
    await client.end();
  });
  afterEach(async () => {
    for (const r of replicas.splice(0)) {
      await r.leases.close();
      await r.pool.end();
    }
  });

  it("three replicas admitted at once together pass a key's requests per minute exactly", async () => {
    const fleet = [replica(), replica(), replica()];
    const id = keyId();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => fleet[i % 3]!.keys.admit(id, limits({ requestsPerMinute: 10 }))),
    );
    expect(answers.filter((a) => a.ok).length).toBe(10);
    const refused = answers.find((a): a is Extract<KeyAdmission, { ok: false }> => !a.ok)!;
    expect(refused.error).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    expect(refused.headers).toContainEqual(['x-ratelimit-remaining-requests', '0']);
    expect(Number(refused.error.retryAfter)).toBeGreaterThan(0);
  });

  it('concurrency is a fleet-wide count of leases; a release on one replica frees a place on another', async () => {
    const [a, b] = [replica(), replica()];
    const id = keyId();
    const lim = limits({ maxConcurrent: 2 });
    const first = await a.keys.admit(id, lim);
    const second = await b.keys.admit(id, lim);
    expect([first.ok, second.ok]).toEqual([true, true]);
    expect((await a.keys.admit(id, lim)).ok).toBe(false);
    expect((await b.keys.admit(id, lim)).ok).toBe(false);
    if (first.ok) first.lease.release();
    await vi.waitFor(async () => {
      const again = await b.keys.admit(id, lim);
      expect(again.ok).toBe(true);
    });
  });

  it('a replica that stops renewing (killed) gives its concurrency back once its leases expire', async () => {
    // The renewals are timers in this process: a lease time of 6 s over renewals every 0.5 s outlasts a stall of
    // 5 s on a loaded machine (3 s over 0.5 s did not leave enough).
    const ttlMs = 6_000;
    const dying = replica({ ttlMs, renewMs: 500 });
    const survivor = replica({ ttlMs, renewMs: 500 });
    const id = keyId();
    const lim = limits({ maxConcurrent: 1 });
    expect((await dying.keys.admit(id, lim)).ok).toBe(true); // never released: the replica "dies" holding it
    // Renewals keep it held past its lease time ...
    await new Promise((r) => setTimeout(r, ttlMs + 1_000));
    expect((await survivor.keys.admit(id, lim)).ok).toBe(false);
    // ... and without them (SIGKILL) it expires: the survivor admits again within the lease time.
    dying.leases.halt();
    await vi.waitFor(async () => expect((await survivor.keys.admit(id, lim)).ok).toBe(true), {
      timeout: ttlMs + 4_000,
      interval: 200,
    });
  }, 30_000);

  it("tokens counted on one replica hold back the key's next request on another", async () => {
    const [a, b] = [replica(), replica()];
    const id = keyId();
    const lim = limits({ tokensPerMinute: 100 });
    const first = await a.keys.admit(id, lim);
    expect(first.ok).toBe(true);
    if (first.ok) {
      first.lease.recordTokens(100);
      first.lease.release();
    }
    await vi.waitFor(async () => {
      const next = await b.keys.admit(id, lim);
      expect(next.ok).toBe(false);
      if (!next.ok) expect(next.error.param).toBe('limits.tokensPerMinute');
    });
  });

  it('a key without limits makes no database call', async () => {
    const r = replica();
    const connect = vi.spyOn(r.pool, 'connect');
    const query = vi.spyOn(r.pool, 'query');
    for (let i = 0; i < 5; i++) expect(await r.keys.admit(keyId(), NONE)).toMatchObject({ ok: true, headers: [] });
    expect(r.keys.peek('any', NONE)).toEqual([]);
    expect(connect).not.toHaveBeenCalled();
    expect(query).not.toHaveBeenCalled();
  });

  it('sign-in: failures on any replica count for the email everywhere; guesses sent to all at once cannot pass the limit', async () => {
    const fleet = [replica(), replica(), replica()];
    // 12 concurrent guesses for one email from 12 addresses, over three replicas: at most 5 checks may start.
    const gates = await Promise.all(
      Array.from({ length: 12 }, (_, i) => fleet[i % 3]!.signIns.tryBegin('victim@example.com', `10.0.0.${i}`)),
    );
    const started = gates.filter((g): g is Extract<SignInGate, { attempt: unknown }> => 'attempt' in g);
    expect(started.length).toBe(5);
    for (const g of started) g.attempt.failed();
    // The failures are recorded (asynchronously): the email stays refused on every replica, for minutes.
    for (const r of fleet) {
      await vi.waitFor(async () => {
        const gate = await r.signIns.tryBegin('victim@example.com', '10.9.9.9');
        expect('retryAfter' in gate && gate.retryAfter).toBeGreaterThan(60);
      });
    }
    // Another email from a fresh address is not held up; a success clears its own email's failures.
    const other = await fleet[0]!.signIns.tryBegin('someone@example.com', '10.1.1.1');
    expect('attempt' in other).toBe(true);
    if ('attempt' in other) other.attempt.succeeded();
  });

  it('sign-in: a failed attempt on one replica is seen by the next check on another', async () => {
    const [a, b] = [replica(), replica()];
    for (let i = 0; i < 5; i++) {
      const gate = await (i % 2 === 0 ? a : b).signIns.tryBegin('slow@example.com', '10.2.2.2');
      expect('attempt' in gate).toBe(true);
      if ('attempt' in gate) gate.attempt.failed();
      // each failure lands before the next check (the statement is sent without waiting)
      await vi.waitFor(async () => {
        const c = await a.pool.query<{ n: string }>(
          `SELECT coalesce(sum(failures), 0) AS n FROM fleet_sign_in_failures WHERE kind = 'address'`,
        );
        expect(Number(c.rows[0]!.n)).toBeGreaterThanOrEqual(i + 1);
      });
    }
    const sixth = await b.signIns.tryBegin('slow@example.com', '10.3.3.3');
    expect('retryAfter' in sixth).toBe(true);
  });

  it('the database unreachable: a limited key and a sign-in answer 503 store_unavailable; an unlimited key is admitted', async () => {
    const pool = new pg.Pool({ connectionString: url.replace(/:\d+\//, ':1/'), max: 1, connectionTimeoutMillis: 500 });
    const leases = new FleetLeases(pool, log, { sweepMs: 0 });
    const keys = new FleetKeyLimiter(leases, log);
    const signIns = new FleetSignInLimiter(leases, log);
    await expect(keys.admit(keyId(), limits({ requestsPerMinute: 5 }))).rejects.toMatchObject({
      status: 503,
      code: 'store_unavailable',
    });
    await expect(signIns.tryBegin('x@example.com', '10.0.0.1')).rejects.toMatchObject({
      status: 503,
      code: 'store_unavailable',
    });
    expect((await keys.admit(keyId(), NONE)).ok).toBe(true);
    leases.halt();
    await pool.end();
  });
});
