import { describe, expect, it } from 'vitest';
import { parseAppPatch } from '../../../src/apps/app-input.ts';
import { ApiError } from '../../../src/errors/index.ts';
import { parseKeyPatch } from '../../../src/accounts/account-input.ts';
import { parseProjectPatch } from '../../../src/workspaces/workspace-input.ts';
import { thrownBy } from '../../helpers/thrown.ts';

/**
 * `null` in a management PATCH body: the field is present, so a field that cannot be null is a 400
 * `invalid_type` naming it (never `missing_required_parameter`, which says it was not sent); a field where
 * null has a meaning (temperature, limits, apiKeyEnv, an env value) keeps that meaning.
 */
const refusal = (run: () => unknown) => thrownBy(run, ApiError);

const wrongType = (param: string) => ({ status: 400, type: 'invalid_request_error', param, code: 'invalid_type' });
const APP = { env: { A: 'a' }, apiKeyEnv: 'HEARTH_KEY' };

describe('null in a PATCH body', () => {
  it('inference project: name, model, providerApiKey and state cannot be null; temperature null clears it', () => {
    for (const field of ['name', 'model', 'providerApiKey', 'state']) {
      expect(
        refusal(() => parseProjectPatch({ [field]: null })),
        field,
      ).toMatchObject(wrongType(field));
    }
    // Also when another field is valid: the null one is named.
    expect(refusal(() => parseProjectPatch({ model: 'gpt-4o', name: null }))).toMatchObject(wrongType('name'));
    expect(parseProjectPatch({ temperature: null })).toMatchObject({ temperature: null });
  });

  it('API key: name cannot be null; limits null lifts them all and resets the priority', () => {
    expect(refusal(() => parseKeyPatch({ name: null }))).toMatchObject(wrongType('name'));
    expect(parseKeyPatch({ limits: null }).limits).toEqual({
      requestsPerMinute: null,
      tokensPerMinute: null,
      maxConcurrent: null,
      priority: 'interactive',
    });
  });

  it('app: name, healthPath and env cannot be null; apiKeyEnv null removes the key, an env value null unsets it', () => {
    for (const field of ['name', 'healthPath', 'env']) {
      expect(
        refusal(() => parseAppPatch({ [field]: null }, APP)),
        field,
      ).toMatchObject(wrongType(field));
    }
    expect(parseAppPatch({ apiKeyEnv: null }, APP)).toMatchObject({ apiKeyEnv: null });
    expect(parseAppPatch({ env: { A: null } }, APP)).toMatchObject({ env: { A: null } });
  });

  it('a value of another JSON type is invalid_type too; a string that breaks the rules stays invalid_value', () => {
    expect(refusal(() => parseProjectPatch({ name: 5 }))).toMatchObject(wrongType('name'));
    expect(refusal(() => parseAppPatch({ healthPath: 5 }, APP))).toMatchObject(wrongType('healthPath'));
    expect(refusal(() => parseAppPatch({ healthPath: 'no-slash' }, APP))).toMatchObject({
      param: 'healthPath',
      code: 'invalid_value',
    });
    expect(refusal(() => parseProjectPatch({ name: '   ' }))).toMatchObject({ param: 'name', code: 'invalid_value' });
  });
});
