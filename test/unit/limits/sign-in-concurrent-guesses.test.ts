import { beforeEach, describe, expect, it } from 'vitest';
import { AccountService } from '../../../src/accounts/account-service.ts';
import { SignInLimiter } from '../../../src/limits/sign-in-limiter.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

/**
 * The failed sign-in limits hold for guesses sent at once. The limiter was asked before the password
 * check and told of a failure after it, so every guess that arrived while the first checks were still
 * running (scrypt runs off the event loop) passed: 20 parallel guesses were all checked against a limit
 * of 5 per email. Now a check in progress counts against the limits until it ends; the guesses beyond
 * them are 429 too_many_sign_in_attempts (Retry-After at least 1 s) without a password check, and a check
 * that ends in success frees its place.
 */
const FAST_KDF = { N: 2 ** 10, r: 8, p: 1 };
const PER_EMAIL = 3;
const PER_ADDRESS = 5;

const temp = useTempStore('hearth-sign-in-burst-');
let accounts: AccountService;
let verified = 0;

beforeEach(async () => {
  const users = new UserRepository(temp.store, FAST_KDF);
  const verify = users.verify.bind(users);
  users.verify = (email, password) => {
    verified++;
    return verify(email, password);
  };
  verified = 0;
  accounts = new AccountService({
    users,
    sessions: new SessionRepository(temp.store, { idleMs: 60_000, maxAgeMs: 3_600_000 }),
    signIns: new SignInLimiter({ perEmail: PER_EMAIL, perAddress: PER_ADDRESS }),
  });
  await users.create({ email: 'ada@x.io', password: 'right-password', accountId: 'a1', role: 'owner' });
  await users.create({ email: 'bob@x.io', password: 'bobs-password', accountId: 'a1', role: 'member' });
});

type Outcome = { status: number; code: string; retryAfter?: number };

async function outcome(attempt: Promise<unknown>): Promise<Outcome> {
  try {
    await attempt;
    return { status: 204, code: 'signed_in' };
  } catch (err) {
    const e = err as { status: number; code: string; retryAfter?: number };
    return { status: e.status, code: e.code, ...(e.retryAfter === undefined ? {} : { retryAfter: e.retryAfter }) };
  }
}

const count = (all: Outcome[], status: number) => all.filter((o) => o.status === status).length;

describe('failed sign-in limits under parallel guesses', () => {
  it('20 wrong passwords for one email at once: at most the per-email limit are checked, the rest are 429', async () => {
    const all = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        outcome(accounts.signIn({ email: 'ada@x.io', password: `guess-${i}` }, `10.0.0.${i}`)),
      ),
    );
    expect(count(all, 401)).toBe(PER_EMAIL);
    expect(count(all, 429)).toBe(20 - PER_EMAIL);
    expect(verified).toBe(PER_EMAIL);
    for (const o of all.filter((x) => x.status === 429)) {
      expect(o.code).toBe('too_many_sign_in_attempts');
      expect(o.retryAfter).toBeGreaterThanOrEqual(1);
    }
    // the limit then holds for the right password too, as for guesses made one after another
    expect(await outcome(accounts.signIn({ email: 'ada@x.io', password: 'right-password' }, '10.0.1.1'))).toMatchObject(
      { status: 429 },
    );
  });

  it('20 wrong passwords from one address at once, over many emails: at most the per-address limit are checked', async () => {
    const all = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        outcome(accounts.signIn({ email: `user${i}@x.io`, password: 'guess' }, '10.9.9.9')),
      ),
    );
    expect(count(all, 401)).toBe(PER_ADDRESS);
    expect(count(all, 429)).toBe(20 - PER_ADDRESS);
    expect(verified).toBe(PER_ADDRESS);
    expect(await outcome(accounts.signIn({ email: 'bob@x.io', password: 'bobs-password' }, '10.9.9.9'))).toMatchObject({
      status: 429,
    });
    expect(await outcome(accounts.signIn({ email: 'bob@x.io', password: 'bobs-password' }, '10.9.9.8'))).toMatchObject({
      status: 204,
    });
  });

  it('a check in progress holds its place only until it ends: right passwords at once all get in, and the places come back', async () => {
    const all = await Promise.all(
      Array.from({ length: PER_EMAIL }, (_, i) =>
        outcome(accounts.signIn({ email: 'ada@x.io', password: 'right-password' }, `10.0.2.${i}`)),
      ),
    );
    expect(all.map((o) => o.status)).toEqual(Array(PER_EMAIL).fill(204));
    // nothing is left counted: the full per-email allowance of wrong guesses is still there, and no more
    const guesses = await Promise.all(
      Array.from({ length: PER_EMAIL + 2 }, (_, i) =>
        outcome(accounts.signIn({ email: 'ada@x.io', password: `nope-${i}` }, `10.0.3.${i}`)),
      ),
    );
    expect(count(guesses, 401)).toBe(PER_EMAIL);
    expect(count(guesses, 429)).toBe(2);
  });

  it('a sign-in turned away by the bound on password work (32 at once) holds no place and counts nothing', async () => {
    const others = Array.from({ length: 32 }, (_, i) =>
      outcome(accounts.signIn({ email: `someone${i}@x.io`, password: 'guess' }, `10.1.0.${i}`)),
    );
    // PER_EMAIL turned-away sign-ins: were their places kept, the next one would be refused by the email's limit
    for (let i = 0; i < PER_EMAIL; i++) {
      expect(
        await outcome(accounts.signIn({ email: 'ada@x.io', password: 'right-password' }, '10.1.1.1')),
      ).toMatchObject({ status: 429, code: 'too_many_sign_in_attempts', retryAfter: 1 });
    }
    expect((await Promise.all(others)).map((o) => o.status)).toEqual(Array(32).fill(401));
    expect(await outcome(accounts.signIn({ email: 'ada@x.io', password: 'right-password' }, '10.1.1.1'))).toMatchObject(
      { status: 204 },
    );
  });

  it('a malformed sign-in body takes no place and counts nothing', async () => {
    for (let i = 0; i < 10; i++)
      expect(await outcome(accounts.signIn({ email: 'ada@x.io' }, '10.0.4.1'))).toMatchObject({ status: 400 });
    expect(await outcome(accounts.signIn({ email: 'ada@x.io', password: 'right-password' }, '10.0.4.1'))).toMatchObject(
      { status: 204 },
    );
  });
});
