import { beforeEach, describe, expect, it } from 'vitest';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { useTempStore } from '../../helpers/temp-store.ts';

const FAST = { N: 2 ** 10, r: 8, p: 1 };
const temp = useTempStore('hearth-users-');
let users: UserRepository;

beforeEach(() => {
  users = new UserRepository(temp.store, FAST);
});

describe('UserRepository', () => {
  it('normalizes emails, keeps them unique across accounts, and never stores the password', async () => {
    const ada = await users.create({
      email: '  Ada@Example.COM ',
      password: 'correct horse',
      accountId: 'a1',
      role: 'owner',
    });
    expect(ada.email).toBe('ada@example.com');
    expect(ada.id).toMatch(/^usr_/);
    expect(ada.passwordHash).toMatch(/^scrypt\$/);
    expect(JSON.stringify(temp.store.dbs.users.get(ada.id))).not.toContain('correct horse');
    await expect(
      users.create({ email: 'ADA@example.com', password: 'another one', accountId: 'a2', role: 'member' }),
    ).rejects.toMatchObject({ status: 409, code: 'email_taken' });
    expect(users.getByEmail('ada@EXAMPLE.com')?.id).toBe(ada.id);
    // One mailbox however its letters are encoded: 'ä' composed (NFC) or as 'a' + U+0308 (NFD).
    const nfd = await users.create({
      email: 'Zoe\u0308@x.io',
      password: 'pass-word-9',
      accountId: 'a1',
      role: 'member',
    });
    expect(nfd.email).toBe('zo\u00eb@x.io');
    await expect(
      users.create({ email: 'zo\u00eb@x.io', password: 'pass-word-9', accountId: 'a2', role: 'member' }),
    ).rejects.toMatchObject({ status: 409, code: 'email_taken' });
    expect(users.getByEmail('ZOE\u0308@X.IO')?.id).toBe(nfd.id);
    expect(temp.store.dbs.accounts.get('a1')).toBeDefined();
  });

  it('verifies email + password; a wrong password and an unknown email are both null', async () => {
    const u = await users.create({ email: 'm@example.com', password: 'pass-word-1', accountId: 'a1', role: 'member' });
    expect((await users.verify('M@Example.com', 'pass-word-1'))?.id).toBe(u.id);
    expect(await users.verify('m@example.com', 'pass-word-2')).toBeNull();
    expect(await users.verify('nobody@example.com', 'pass-word-1')).toBeNull();
  });

  it('lists per account and refuses to remove the last owner', async () => {
    const o1 = await users.create({ email: 'o1@x.io', password: 'password1', accountId: 'a1', role: 'owner' });
    const m = await users.create({ email: 'm@x.io', password: 'password1', accountId: 'a1', role: 'member' });
    await users.create({ email: 'other@x.io', password: 'password1', accountId: 'a2', role: 'owner' });
    expect(users.list('a1').map((u) => u.email)).toEqual(['o1@x.io', 'm@x.io']);
    expect(users.list()).toHaveLength(3);
    expect(await users.delete(o1.id, 'a1')).toBe('last_owner');
    expect(await users.delete(m.id, 'a2')).toBe('not_found'); // another account's user looks missing
    expect(await users.delete(m.id, 'a1')).toBe('deleted');
    expect(users.getByEmail('m@x.io')).toBeUndefined();
    const o2 = await users.create({ email: 'o2@x.io', password: 'password1', accountId: 'a1', role: 'owner' });
    expect(await users.delete(o1.id)).toBe('deleted');
    expect(users.list('a1').map((u) => u.id)).toEqual([o2.id]);
    // the email is free again
    expect(
      (await users.create({ email: 'm@x.io', password: 'password1', accountId: 'a1', role: 'member' })).email,
    ).toBe('m@x.io');
  });

  it('removing a user ends its sessions', async () => {
    const sessions = new SessionRepository(temp.store, { idleMs: 60_000, maxAgeMs: 3_600_000 });
    await users.create({ email: 'o@x.io', password: 'password1', accountId: 'a1', role: 'owner' });
    const m = await users.create({ email: 'm@x.io', password: 'password1', accountId: 'a1', role: 'member' });
    const { token } = await sessions.create(m.id, 'a1');
    expect(sessions.resolve(token)?.userId).toBe(m.id);
    await users.delete(m.id);
    expect(sessions.resolve(token)).toBeNull();
  });

  it('setup token: single use, stored hashed, voided by a new one, refused once a user exists', async () => {
    expect(users.hasUsers()).toBe(false);
    const first = (await users.issueSetupToken(60_000))!;
    const second = (await users.issueSetupToken(60_000))!;
    expect([...temp.store.dbs.setupTokens.getKeys()]).toHaveLength(1);
    expect(JSON.stringify([...temp.store.dbs.setupTokens.getRange()])).not.toContain(second);
    expect(await users.setupFirstOwner(first, 'o@x.io', 'password1', 'default')).toBe('invalid_token');
    const done = await users.setupFirstOwner(second, 'O@x.io', 'password1', 'default');
    expect(done).toMatchObject({ user: { email: 'o@x.io', role: 'owner', accountId: 'default' } });
    expect(await users.setupFirstOwner(second, 'p@x.io', 'password1', 'default')).toBe('setup_complete');
    expect(await users.issueSetupToken(60_000)).toBeNull();
    expect([...temp.store.dbs.setupTokens.getKeys()]).toHaveLength(0);
  });

  it('an expired setup token is refused', async () => {
    const token = (await users.issueSetupToken(-1))!;
    expect(users.setupTokenValid(token)).toBe(false);
    expect(await users.setupFirstOwner(token, 'o@x.io', 'password1', 'default')).toBe('invalid_token');
    expect(users.hasUsers()).toBe(false);
  });
});
