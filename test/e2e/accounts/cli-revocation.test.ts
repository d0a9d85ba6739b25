import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, type HearthProcess, hearthCli, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * The CLI and a running server share the LMDB data dir (README "Data"): a key revoked by `hearth keys revoke` in
 * another process is refused by the server at its next request, although the server had just read (and keeps in
 * memory) that key's record: its reads check the stored bytes every time (database.ts validatedReads).
 */
describe('a key revoked by the CLI while the server runs', () => {
  let hearth: HearthProcess;
  beforeAll(async () => {
    hearth = await startHearthProcess({
      args: ['--model', await tinyChatModel(), '--engine', 'instant', '--front', 'off'],
    });
    await hearth.waitReady();
  }, 60_000);
  afterAll(async () => {
    await hearth?.stop();
  });

  it('is refused at the next request; the other keys still work', async () => {
    const doomed = createKey(hearth.dataDir, 'doomed');
    const models = (key: string) =>
      fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    for (let i = 0; i < 3; i++) expect((await models(doomed)).status).toBe(200); // read, and kept decoded
    const id = doomed.split('_')[1]!;
    const revoked = hearthCli(['keys', 'revoke', id, '--data-dir', hearth.dataDir]);
    expect(revoked.status, revoked.stderr).toBe(0);
    const after = await models(doomed);
    expect(after.status).toBe(401);
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect((await models(hearth.key)).status).toBe(200);
  });
});
