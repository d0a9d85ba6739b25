import { invalidRequest } from '../errors/index.ts';
import { isProviderName, PROVIDER_NAMES, type ProviderName } from '../providers/chat-provider.ts';
import type { KeyLimits, UserRole } from '../store/database.ts';

/**
 * Validation of management API bodies: raw JSON in, typed input out. Every 400 names the field in
 * `param`; unknown fields are refused (never silently dropped). Pure.
 */
type Json = Record<string, unknown>;

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

const MAX_NAME = 200;
const MAX_MODEL = 256;
const MAX_PROVIDER_KEY = 4096;
/** Printable ASCII without spaces: a provider key travels in an HTTP header or query string. */
const PROVIDER_KEY_CHARS = /^[\x21-\x7e]+$/;
const MODEL_CHARS = /^[\x21-\x7e]+$/;
/**
 * A lone UTF-16 surrogate (JSON `"\ud800"`) has no UTF-8 form: stored, it would read back as other text
 * than was acknowledged (and hash like other passwords), so text with one is refused.
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

function wellFormed(v: string, field: string): void {
  if (LONE_SURROGATE.test(v)) throw invalidRequest(`'${field}' is not valid Unicode text (it has a lone surrogate)`, field, 'invalid_value');
}

function object(body: unknown): Json {
  if (body === undefined) throw invalidRequest('Request body is required', null, 'missing_body');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('Request body must be a JSON object', null, 'invalid_type');
  return body as Json;
}

function onlyFields(body: Json, allowed: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw invalidRequest(`Unrecognized field: ${key} (allowed: ${allowed.join(', ')})`, key, 'unknown_parameter');
  }
}

function text(body: Json, field: string, max: number, pattern?: RegExp, what = 'characters'): string {
  const v = body[field];
  if (v === undefined || v === null) throw invalidRequest(`'${field}' is required`, field, 'missing_required_parameter');
  if (typeof v !== 'string') throw invalidRequest(`'${field}' must be a string`, field, 'invalid_type');
  wellFormed(v, field);
  const t = v.trim();
  if (t.length === 0) throw invalidRequest(`'${field}' must not be empty`, field, 'invalid_value');
  if (t.length > max) throw invalidRequest(`'${field}' must be at most ${max} characters`, field, 'invalid_value');
  if (pattern && !pattern.test(t)) throw invalidRequest(`'${field}' contains ${what} that are not allowed`, field, 'invalid_value');
  return t;
}

/**
 * A PATCH field: absent keeps the value. `null` is read only where it has a meaning (`nullable`: clears or
 * lifts it); elsewhere the field is present with the wrong type, a 400 invalid_type naming it.
 */
function optional<T>(body: Json, field: string, read: () => T, nullable = false): T | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (v === null && !nullable) throw invalidRequest(`'${field}' cannot be null (leave it out to keep its value)`, field, 'invalid_type');
  return read();
}

function temperature(body: Json): number | null {
  const v = body.temperature;
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidRequest("'temperature' must be a number", 'temperature', 'invalid_type');
  if (v < 0 || v > 2) throw invalidRequest(`'temperature' must be between 0 and 2, got ${v}`, 'temperature', 'invalid_value');
  return v;
}

function provider(body: Json): ProviderName {
  const v = body.provider;
  if (v === undefined || v === null) throw invalidRequest("'provider' is required", 'provider', 'missing_required_parameter');
  if (!isProviderName(v)) throw invalidRequest(`'provider' must be one of ${PROVIDER_NAMES.join(', ')}`, 'provider', 'invalid_value');
  return v;
}

const providerKey = (body: Json) => text(body, 'providerApiKey', MAX_PROVIDER_KEY, PROVIDER_KEY_CHARS, 'spaces or characters');
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
  return { name: text(b, 'name', MAX_NAME), provider: provider(b), model: model(b), providerApiKey: providerKey(b), temperature: temperature(b) };
}

/** PATCH .../inference/{projectId}: any of name, model, temperature (null clears), providerApiKey, state. */
export function parseProjectPatch(body: unknown): ProjectPatch {
  const b = object(body);
  if ('provider' in b) throw invalidRequest("'provider' cannot be changed; create a new project for another provider", 'provider', 'immutable_field');
  const fields = ['name', 'model', 'temperature', 'providerApiKey', 'state'];
  onlyFields(b, fields);
  if (!fields.some((f) => b[f] !== undefined)) throw invalidRequest(`Nothing to update: give at least one of ${fields.join(', ')}`, null, 'empty_update');
  const state = optional(b, 'state', () => {
    if (b.state !== 'suspended' && b.state !== 'ready') throw invalidRequest("'state' must be 'suspended' or 'ready'", 'state', 'invalid_value');
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

// Users, sessions and key limits ---------------------------------------------------------------------------

export interface KeyInput {
  name: string;
  limits: KeyLimits;
}

export interface KeyPatch {
  name?: string | undefined;
  /** Only the limits named in the body; null lifts one. */
  limits?: Partial<KeyLimits> | undefined;
}

export interface SignInInput {
  email: string;
  password: string;
}

export interface UserInput extends SignInInput {
  role: UserRole;
}

export interface SetupInput extends SignInInput {
  token: string;
}

const LIMIT_FIELDS = ['requestsPerMinute', 'tokensPerMinute', 'maxConcurrent'] as const;
const MAX_LIMIT = 1_000_000_000;
const MAX_EMAIL = 254;
/** One @, something either side, no spaces or angle brackets: the address is an identifier here, never mailed. */
const EMAIL_SHAPE = /^[^\s@<>]+@[^\s@<>]+$/;
export const MIN_PASSWORD = 8;
export const MAX_PASSWORD = 1024;

/** `limits` of a key body: each a positive integer or null; `partial` keeps absent fields absent (PATCH). */
function limits(value: unknown, partial: boolean): Partial<KeyLimits> {
  if (value === null) return { requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null };
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidRequest("'limits' must be an object or null", 'limits', 'invalid_type');
  const b = value as Json;
  for (const key of Object.keys(b)) {
    if (!(LIMIT_FIELDS as readonly string[]).includes(key)) throw invalidRequest(`Unrecognized field: limits.${key} (allowed: ${LIMIT_FIELDS.join(', ')})`, `limits.${key}`, 'unknown_parameter');
  }
  const out: Partial<KeyLimits> = {};
  for (const f of LIMIT_FIELDS) {
    const v = b[f];
    if (v === undefined) {
      if (!partial) out[f] = null;
      continue;
    }
    if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_LIMIT)) {
      throw invalidRequest(`'limits.${f}' must be a whole number from 1 to ${MAX_LIMIT}, or null for no limit`, `limits.${f}`, 'invalid_value');
    }
    out[f] = v;
  }
  return out;
}

/** POST /api/v1/keys: {name, limits?}. */
export function parseKeyInput(body: unknown): KeyInput {
  const b = object(body);
  onlyFields(b, ['name', 'limits']);
  return { name: text(b, 'name', MAX_NAME), limits: { requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null, ...(b.limits === undefined ? {} : limits(b.limits, false)) } };
}

/** PATCH /api/v1/keys/{id}: any of name, limits (a partial object; null lifts them all). */
export function parseKeyPatch(body: unknown): KeyPatch {
  const b = object(body);
  onlyFields(b, ['name', 'limits']);
  if (b.name === undefined && b.limits === undefined) throw invalidRequest('Nothing to update: give name and/or limits', null, 'empty_update');
  return { name: optional(b, 'name', () => text(b, 'name', MAX_NAME)), limits: optional(b, 'limits', () => limits(b.limits, true), true) };
}

function email(b: Json): string {
  const e = text(b, 'email', MAX_EMAIL);
  if (!EMAIL_SHAPE.test(e)) throw invalidRequest("'email' must be an email address", 'email', 'invalid_value');
  return e;
}

/** A password is taken as typed (never trimmed); `checkStrength` applies the length rule to new passwords. */
function password(b: Json, checkStrength: boolean): string {
  const v = b.password;
  if (v === undefined || v === null) throw invalidRequest("'password' is required", 'password', 'missing_required_parameter');
  if (typeof v !== 'string') throw invalidRequest("'password' must be a string", 'password', 'invalid_type');
  if (v.length > MAX_PASSWORD) throw invalidRequest(`'password' must be at most ${MAX_PASSWORD} characters`, 'password', 'invalid_value');
  if (checkStrength && v.length < MIN_PASSWORD) throw invalidRequest(`'password' must be at least ${MIN_PASSWORD} characters`, 'password', 'invalid_value');
  if (v.length === 0) throw invalidRequest("'password' must not be empty", 'password', 'invalid_value');
  wellFormed(v, 'password');
  return v;
}

/** POST /api/v1/session: {email, password}. */
export function parseSignInInput(body: unknown): SignInInput {
  const b = object(body);
  onlyFields(b, ['email', 'password']);
  return { email: text(b, 'email', MAX_EMAIL), password: password(b, false) };
}

/** POST /api/v1/users: {email, password, role?} (role defaults to member). */
export function parseUserInput(body: unknown): UserInput {
  const b = object(body);
  onlyFields(b, ['email', 'password', 'role']);
  const role = b.role ?? 'member';
  if (role !== 'owner' && role !== 'member') throw invalidRequest("'role' must be 'owner' or 'member'", 'role', 'invalid_value');
  return { email: email(b), password: password(b, true), role };
}

/** POST /api/v1/setup: {token, email, password}. */
export function parseSetupInput(body: unknown): SetupInput {
  const b = object(body);
  onlyFields(b, ['token', 'email', 'password']);
  return { token: text(b, 'token', 256), email: email(b), password: password(b, true) };
}
