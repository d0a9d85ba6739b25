import { invalidRequest } from '../errors/index.ts';
import { type Json, MAX_NAME, object, onlyFields, optional, text, wellFormed } from '../http/body-fields.ts';
import type { KeyLimits, KeyPriority, UserRole } from '../store/database.ts';

/** Validation of the API-key, user, sign-in and setup bodies (http/body-fields.ts readers). Pure. */
export interface KeyInput {
  name: string;
  limits: Required<KeyLimits>;
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
/** The key's scheduling priority (contract "Fair share and priority between tenants"); null resets it to interactive. */
const PRIORITY_FIELD = 'priority';
const KEY_PRIORITIES: readonly KeyPriority[] = ['interactive', 'batch'];
const NO_KEY_LIMITS: Required<KeyLimits> = {
  requestsPerMinute: null,
  tokensPerMinute: null,
  maxConcurrent: null,
  priority: 'interactive',
};
const MAX_LIMIT = 1_000_000_000;
const MAX_EMAIL = 254;
/** One @, something either side, no spaces or angle brackets: the address is an identifier here, never mailed. */
const EMAIL_SHAPE = /^[^\s@<>]+@[^\s@<>]+$/;
export const MIN_PASSWORD = 8;
export const MAX_PASSWORD = 1024;

/**
 * `limits` of a key body: each a positive integer or null, `priority` 'interactive' | 'batch' (null: interactive);
 * `partial` keeps absent fields absent (PATCH).
 */
function limits(value: unknown, partial: boolean): Partial<KeyLimits> {
  if (value === null) return { ...NO_KEY_LIMITS };
  if (typeof value !== 'object' || Array.isArray(value))
    throw invalidRequest("'limits' must be an object or null", 'limits', 'invalid_type');
  const b = value as Json;
  for (const key of Object.keys(b)) {
    if (!(LIMIT_FIELDS as readonly string[]).includes(key) && key !== PRIORITY_FIELD)
      throw invalidRequest(
        `Unrecognized field: limits.${key} (allowed: ${[...LIMIT_FIELDS, PRIORITY_FIELD].join(', ')})`,
        `limits.${key}`,
        'unknown_parameter',
      );
  }
  const out: Partial<KeyLimits> = {};
  const p = b[PRIORITY_FIELD];
  if (p === null) out.priority = 'interactive';
  else if (p !== undefined) {
    if (typeof p !== 'string' || !(KEY_PRIORITIES as readonly string[]).includes(p))
      throw invalidRequest(
        `'limits.priority' must be one of ${KEY_PRIORITIES.map((v) => `'${v}'`).join(', ')}`,
        'limits.priority',
        'invalid_value',
      );
    out.priority = p as KeyPriority;
  } else if (!partial) out.priority = 'interactive';
  for (const f of LIMIT_FIELDS) {
    const v = b[f];
    if (v === undefined) {
      if (!partial) out[f] = null;
      continue;
    }
    if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_LIMIT)) {
      throw invalidRequest(
        `'limits.${f}' must be a whole number from 1 to ${MAX_LIMIT}, or null for no limit`,
        `limits.${f}`,
        'invalid_value',
      );
    }
    out[f] = v;
  }
  return out;
}

/** POST /api/v1/keys: {name, limits?}. */
export function parseKeyInput(body: unknown): KeyInput {
  const b = object(body);
  onlyFields(b, ['name', 'limits']);
  return {
    name: text(b, 'name', MAX_NAME),
    limits: { ...NO_KEY_LIMITS, ...(b.limits === undefined ? {} : limits(b.limits, false)) },
  };
}

/** PATCH /api/v1/keys/{id}: any of name, limits (a partial object; null lifts them all). */
export function parseKeyPatch(body: unknown): KeyPatch {
  const b = object(body);
  onlyFields(b, ['name', 'limits']);
  if (b.name === undefined && b.limits === undefined)
    throw invalidRequest('Nothing to update: give name and/or limits', null, 'empty_update');
  return {
    name: optional(b, 'name', () => text(b, 'name', MAX_NAME)),
    limits: optional(b, 'limits', () => limits(b.limits, true), true),
  };
}

function email(b: Json): string {
  const e = text(b, 'email', MAX_EMAIL);
  if (!EMAIL_SHAPE.test(e)) throw invalidRequest("'email' must be an email address", 'email', 'invalid_value');
  return e;
}

/** A password is taken as typed (never trimmed); `checkStrength` applies the length rule to new passwords. */
function password(b: Json, checkStrength: boolean): string {
  const v = b.password;
  if (v === undefined || v === null)
    throw invalidRequest("'password' is required", 'password', 'missing_required_parameter');
  if (typeof v !== 'string') throw invalidRequest("'password' must be a string", 'password', 'invalid_type');
  if (v.length > MAX_PASSWORD)
    throw invalidRequest(`'password' must be at most ${MAX_PASSWORD} characters`, 'password', 'invalid_value');
  if (checkStrength && v.length < MIN_PASSWORD)
    throw invalidRequest(`'password' must be at least ${MIN_PASSWORD} characters`, 'password', 'invalid_value');
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
  if (role !== 'owner' && role !== 'member')
    throw invalidRequest("'role' must be 'owner' or 'member'", 'role', 'invalid_value');
  return { email: email(b), password: password(b, true), role };
}

/** POST /api/v1/setup: {token, email, password}. */
export function parseSetupInput(body: unknown): SetupInput {
  const b = object(body);
  onlyFields(b, ['token', 'email', 'password']);
  return { token: text(b, 'token', 256), email: email(b), password: password(b, true) };
}
