import { invalidRequest } from '../errors/index.ts';
import { type Json, MAX_NAME, object, onlyFields, optional, text } from '../http/body-fields.ts';
import { isProviderName, PROVIDER_NAMES, type ProviderName } from '../providers/chat-provider.ts';

/** Validation of the workspace and inference-project bodies (http/body-fields.ts readers). Pure. */
export interface NameInput {
  name: string;
}

export interface ProjectInput {
  name: string;
  provider: ProviderName;
  model: string;
  providerApiKey: string;
  temperature: number | null;
}

export interface ProjectPatch {
  name?: string | undefined;
  model?: string | undefined;
  /** null clears it (the provider's default applies). */
  temperature?: number | null | undefined;
  providerApiKey?: string | undefined;
  /** Suspend, or resume (`ready`: the project is provisioned again, then ready). */
  state?: 'suspended' | 'ready' | undefined;
}

const MAX_MODEL = 256;
const MAX_PROVIDER_KEY = 4096;
/** Printable ASCII without spaces: a provider key travels in an HTTP header or query string. */
const PROVIDER_KEY_CHARS = /^[\x21-\x7e]+$/;
const MODEL_CHARS = /^[\x21-\x7e]+$/;

function temperature(body: Json): number | null {
  const v = body.temperature;
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw invalidRequest("'temperature' must be a number", 'temperature', 'invalid_type');
  if (v < 0 || v > 2)
    throw invalidRequest(`'temperature' must be between 0 and 2, got ${v}`, 'temperature', 'invalid_value');
  return v;
}

function provider(body: Json): ProviderName {
  const v = body.provider;
  if (v === undefined || v === null)
    throw invalidRequest("'provider' is required", 'provider', 'missing_required_parameter');
  if (!isProviderName(v))
    throw invalidRequest(`'provider' must be one of ${PROVIDER_NAMES.join(', ')}`, 'provider', 'invalid_value');
  return v;
}

const providerKey = (body: Json) =>
  text(body, 'providerApiKey', MAX_PROVIDER_KEY, PROVIDER_KEY_CHARS, 'spaces or characters');
const model = (body: Json) => text(body, 'model', MAX_MODEL, MODEL_CHARS, 'spaces or characters');

/** POST /api/v1/workspaces: {name}. */
export function parseNameInput(body: unknown): NameInput {
  const b = object(body);
  onlyFields(b, ['name']);
  return { name: text(b, 'name', MAX_NAME) };
}

/** POST .../inference: {name, provider, model, providerApiKey, temperature?}. */
export function parseProjectInput(body: unknown): ProjectInput {
  const b = object(body);
  onlyFields(b, ['name', 'provider', 'model', 'providerApiKey', 'temperature']);
  return {
    name: text(b, 'name', MAX_NAME),
    provider: provider(b),
    model: model(b),
    providerApiKey: providerKey(b),
    temperature: temperature(b),
  };
}

/** PATCH .../inference/{projectId}: any of name, model, temperature (null clears), providerApiKey, state. */
export function parseProjectPatch(body: unknown): ProjectPatch {
  const b = object(body);
  if ('provider' in b)
    throw invalidRequest(
      "'provider' cannot be changed; create a new project for another provider",
      'provider',
      'immutable_field',
    );
  const fields = ['name', 'model', 'temperature', 'providerApiKey', 'state'];
  onlyFields(b, fields);
  if (!fields.some((f) => b[f] !== undefined))
    throw invalidRequest(`Nothing to update: give at least one of ${fields.join(', ')}`, null, 'empty_update');
  const state = optional(b, 'state', () => {
    if (b.state !== 'suspended' && b.state !== 'ready')
      throw invalidRequest("'state' must be 'suspended' or 'ready'", 'state', 'invalid_value');
    return b.state;
  });
  return {
    name: optional(b, 'name', () => text(b, 'name', MAX_NAME)),
    model: optional(b, 'model', () => model(b)),
    temperature: optional(b, 'temperature', () => temperature(b), true),
    providerApiKey: optional(b, 'providerApiKey', () => providerKey(b)),
    state,
  };
}
