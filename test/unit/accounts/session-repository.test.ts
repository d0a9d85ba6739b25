import { afterEach, describe, expect, it, vi } from 'vitest';
import { sha256Hex } from '../../../src/store/secrets.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

const temp = useTempStore('hearth-sessions-');

afterEach(async () => {
  vi.useRealTimers();
});

describe('SessionRepository', () => {
  it('issues 256-bit opaque values and stores only their SHA-256', async () => {
    const sessions = new SessionRepository(temp.store, { idleMs: 60_000, maxAgeMs: 3_600_000 });
    const { token, session } = await sessions.create('usr_1', 'a1');
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(temp.store.dbs.sessions.get(token)).toBeUndefined();
    expect(temp.store.dbs.sessions.get(sha256Hex(token))).toMatchObject({ userId: 'usr_1', accountId: 'a1' });
    expect(JSON.stringify([...temp.store.dbs.sessions.getRange()])).not.toContain(token);
    expect(sessions.resolve(token)).toMatchObject({ userId: 'usr_1', endsAt: session.endsAt });
    expect(sessions.resolve(`${token.slice(0, -1)}x`)).toBeNull();
    expect(sessions.resolve('')).toBeNull();
  });

  it('ends after the idle time without use, and use keeps it alive', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z'), toFake: ['Date'] });
    const sessions = new SessionRepository(temp.store, { idleMs: 10_000, maxAgeMs: 3_600_000 });
    const { token } = await sessions.create('usr_1', 'a1');
    for (let i = 0; i < 5; i++) {
      vi.advanceTimersByTime(8_000);
      expect(sessions.resolve(token)).not.toBeNull();
      await new Promise((r) => setImmediate(r)); // let the lastSeenAt write land
      await temp.store.transaction(() => {}); // and commit
    }
    vi.advanceTimersByTime(10_001);
    expect(sessions.resolve(token)).toBeNull();
  });

  it('ends at its absolute expiry however busy it is', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z'), toFake: ['Date'] });
    const sessions = new SessionRepository(temp.store, { idleMs: 10_000, maxAgeMs: 30_000 });
    const { token } = await sessions.create('usr_1', 'a1');
    for (let t = 0; t < 28_000; t += 4_000) {
      vi.advanceTimersByTime(4_000);
      expect(sessions.resolve(token)).not.toBeNull();
      await temp.store.transaction(() => {});
    }
    vi.advanceTimersByTime(3_000);
    expect(sessions.resolve(token)).toBeNull();
  });

  it('sign-out ends the session; a new sign-in clears the user’s expired records', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z'), toFake: ['Date'] });
    const sessions = new SessionRepository(temp.store, { idleMs: 10_000, maxAgeMs: 60_000 });
    const a = await sessions.create('usr_1', 'a1');
    const b = await sessions.create('usr_1', 'a1');
    await sessions.end(a.token);
    await sessions.end(a.token); // idempotent
    expect(sessions.resolve(a.token)).toBeNull();
    expect(sessions.resolve(b.token)).not.toBeNull();
    vi.advanceTimersByTime(11_000);
    await sessions.create('usr_1', 'a1');
    expect(temp.store.dbs.sessions.get(sha256Hex(b.token))).toBeUndefined();
    expect([...temp.store.dbs.sessions.getKeys()]).toHaveLength(1);
  });

  it('sweepExpired removes every ended session and its index entry, and keeps live ones', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z'), toFake: ['Date'] });
    const sessions = new SessionRepository(temp.store, { idleMs: 10_000, maxAgeMs: 60_000 });
    await sessions.create('usr_1', 'a1');
    await sessions.create('usr_2', 'a1');
    vi.advanceTimersByTime(11_000);
    const live = await sessions.create('usr_3', 'a1');
    expect(await sessions.sweepExpired()).toBe(2);
    expect([...temp.store.dbs.sessions.getKeys()]).toEqual([sha256Hex(live.token)]);
    expect([...temp.store.dbs.index.getKeys()].filter((k) => k[0] === 'user-session')).toHaveLength(1);
    expect(sessions.resolve(live.token)).not.toBeNull();
  });
});
