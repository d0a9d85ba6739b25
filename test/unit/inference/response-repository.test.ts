import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ResponseRepository, type StoredResponse } from '../../../src/inference/response-repository.ts';
import { HearthStore } from '../../../src/store/database.ts';

/** Stored responses on the real LMDB store, with a clock the test moves: account scoping, TTL, delete, sweep. */
let dir: string;
let store: HearthStore;
let now: number;
let repo: ResponseRepository;
const DAY = 86_400_000;

const response = (id: string, accountId = 'acct-a'): StoredResponse => ({
  id,
  accountId,
  response: { id, object: 'response', output: [] },
  inputItems: [{ id: 'msg_1', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
  history: [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'hello' },
  ],
});

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-responses-'));
  store = HearthStore.open(dir);
  now = Date.parse('2026-11-26T00:00:00Z');
  repo = new ResponseRepository(store, 30, () => now);
});
afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('ResponseRepository', () => {
  it('reads back what was put, for its account only', () => {
    repo.put(response('resp_1'));
    expect(repo.get('acct-a', 'resp_1')).toEqual(response('resp_1'));
    expect(repo.get('acct-b', 'resp_1')).toBeUndefined();
    expect(repo.get('acct-a', 'resp_2')).toBeUndefined();
  });

  it("keeps a schema's '__proto__' property as sent (msgpack read it back as '__proto_'), and reads older records", () => {
    const tools = JSON.parse(
      '[{"type":"function","name":"f","parameters":{"type":"object","properties":{"__proto__":{"type":"string"}}}}]',
    ) as unknown;
    const r = { ...response('resp_p'), response: { id: 'resp_p', object: 'response', tools, output: [] } };
    repo.put(r);
    const back = repo.get('acct-a', 'resp_p')!;
    expect(JSON.stringify(back.response)).toBe(JSON.stringify(r.response));
    // A record written before the response was kept as JSON text: its object as stored.
    const old = { ...store.dbs.responses.get('resp_p')!, id: 'resp_old', response: { id: 'resp_old', output: [] } };
    store.dbs.responses.putSync('resp_old', old);
    expect(repo.get('acct-a', 'resp_old')?.response).toEqual({ id: 'resp_old', output: [] });
  });

  it('an expired response reads as absent and cannot be deleted', () => {
    repo.put(response('resp_1'));
    now += 30 * DAY - 1;
    expect(repo.get('acct-a', 'resp_1')).toBeDefined();
    now += 1;
    expect(repo.get('acct-a', 'resp_1')).toBeUndefined();
    expect(repo.delete('acct-a', 'resp_1')).toBe(false);
  });

  it("delete removes the account's own response only", () => {
    repo.put(response('resp_1'));
    expect(repo.delete('acct-b', 'resp_1')).toBe(false);
    expect(repo.delete('acct-a', 'resp_1')).toBe(true);
    expect(repo.get('acct-a', 'resp_1')).toBeUndefined();
    expect(repo.delete('acct-a', 'resp_1')).toBe(false);
  });

  it('the sweep removes expired responses and their index entries, and keeps live ones', async () => {
    repo.put(response('resp_old'));
    now += 10 * DAY;
    repo.put(response('resp_new'));
    now += 25 * DAY; // resp_old expired 5 days ago; resp_new has 5 days left
    expect(await repo.sweep()).toBe(1);
    expect(store.dbs.responses.get('resp_old')).toBeUndefined();
    expect([
      ...store.dbs.index.getKeys({ start: ['response-expiry'], end: ['response-expiry', '\uffff'] }),
    ]).toHaveLength(1);
    expect(repo.get('acct-a', 'resp_new')).toBeDefined();
    expect(await repo.sweep()).toBe(0);
  });

  it('a response is durable once put returns (another handle on the data dir reads it)', async () => {
    repo.put(response('resp_1'));
    await store.close();
    store = HearthStore.open(dir);
    expect(new ResponseRepository(store, 30, () => now).get('acct-a', 'resp_1')).toEqual(response('resp_1'));
  });
});
