import { notFound } from '../errors/index.ts';
import { listView, type ListView } from '../http/list-view.ts';
import { parseKeyInput, parseKeyPatch } from './account-input.ts';
import type { ApiKeyRepository } from './api-key-repository.ts';
import type { ApiKeyView, CreatedApiKey } from './account-views.ts';

const keyNotFound = () => notFound('API key not found', 'key_not_found');

/** The API keys of the caller's account, shared by the HTTP routes and the CLI: raw JSON bodies in (validated here), views out. */
export class KeyService {
  constructor(private readonly keys: ApiKeyRepository) {}

  /** {name, limits?}: the key is in this answer only. */
  async createKey(accountId: string, body: unknown): Promise<CreatedApiKey> {
    const input = parseKeyInput(body);
    return this.keys.create(input.name, accountId, input.limits);
  }

  /** PATCH {name?, limits?}: limits apply from the key's next request. */
  async updateKey(accountId: string, keyId: string, body: unknown): Promise<ApiKeyView> {
    const patch = parseKeyPatch(body);
    const updated = await this.keys.update(keyId, accountId, patch);
    if (!updated) throw keyNotFound();
    return updated;
  }

  listKeys(accountId: string): ListView<ApiKeyView> {
    return listView(this.keys.list(accountId));
  }

  async revokeKey(accountId: string, keyId: string): Promise<{ id: string; revoked: true }> {
    if (!(await this.keys.revoke(keyId, accountId))) throw keyNotFound();
    return { id: keyId, revoked: true };
  }
}
