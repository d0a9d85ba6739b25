import { requiredFieldError } from '../protocol/json-fields.ts';
import { invalidRequest } from '../errors/index.ts';

/**
 * Validation of the app API's JSON bodies: raw JSON in, typed input out; every 400 names the field in
 * `param`, unknown fields are refused. Pure.
 */
type Json = Record<string, unknown>;

export interface AppInput {
  name: string;
  env: Record<string, string>;
  apiKeyEnv: string | null;
  healthPath: string;
}

export interface AppPatch {
  name?: string | undefined;
  /** A value sets the variable, null unsets it. */
  env?: Record<string, string | null> | undefined;
  apiKeyEnv?: string | null | undefined;
  healthPath?: string | undefined;
}

export interface RepositoryInput {
  repository: string;
  ref: string | null;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Set by Hearth itself; an app cannot override them. */
export const RESERVED_ENV = ['PORT', 'PATH', 'HOME', 'HEARTH_API_URL'] as const;
const MAX_ENV = 100;
const MAX_ENV_VALUE = 32 * 1024;
/**
 * Names and values of the whole env, UTF-8 bytes: what the kernel passes to a process has a bound (2 MiB
 * of arguments and environment on a default stack limit), and a launch past it fails (E2BIG).
 */
const MAX_ENV_BYTES = 1 << 20;
const MAX_NAME = 200;

function object(body: unknown): Json {
  if (body === undefined) throw invalidRequest('Request body is required', null, 'missing_body');
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalidRequest('Request body must be a JSON object', null, 'invalid_type');
  return body as Json;
}

function onlyFields(body: Json, allowed: readonly string[]): void {
  for (const key of Object.keys(body))
    if (!allowed.includes(key))
      throw invalidRequest(`Unrecognized field: ${key} (allowed: ${allowed.join(', ')})`, key, 'unknown_parameter');
}

function name(v: unknown): string {
  if (typeof v !== 'string')
    throw invalidRequest(
      "'name' must be a string",
      'name',
      v === undefined ? 'missing_required_parameter' : 'invalid_type',
    );
  const t = v.trim();
  if (t.length === 0 || t.length > MAX_NAME || /[\0-\x1f]/.test(t))
    throw invalidRequest(`'name' must be 1 to ${MAX_NAME} printable characters`, 'name', 'invalid_value');
  return t;
}

function envName(v: string, param: string): string {
  if (!ENV_NAME.test(v))
    throw invalidRequest(
      `'${param}' must be a variable name (letters, digits, _; not starting with a digit)`,
      param,
      'invalid_value',
    );
  if ((RESERVED_ENV as readonly string[]).includes(v))
    throw invalidRequest(`'${param}': ${v} is set by Hearth`, param, 'invalid_value');
  // A valid name, but as a key of a JavaScript object it is the prototype, never a variable: refused, not dropped.
  if (v === '__proto__') throw invalidRequest(`'${param}': __proto__ is not allowed`, param, 'invalid_value');
  return v;
}

function apiKeyEnv(v: unknown): string | null {
  if (v === null) return null;
  if (typeof v !== 'string')
    throw invalidRequest("'apiKeyEnv' must be a variable name or null", 'apiKeyEnv', 'invalid_type');
  return envName(v, 'apiKeyEnv');
}

function healthPath(v: unknown): string {
  if (typeof v !== 'string')
    throw invalidRequest("'healthPath' must be a path starting with /", 'healthPath', 'invalid_type');
  if (!/^\/[\x21-\x7e]*$/.test(v) || v.length > 512)
    throw invalidRequest("'healthPath' must be a path starting with /", 'healthPath', 'invalid_value');
  return v;
}

function env(v: unknown, allowNull: boolean): Record<string, string | null> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw invalidRequest("'env' must be an object of NAME: value", 'env', 'invalid_type');
  const entries = Object.entries(v as Json);
  if (entries.length > MAX_ENV)
    throw invalidRequest(`'env' may hold at most ${MAX_ENV} variables`, 'env', 'invalid_value');
  const out: Record<string, string | null> = {};
  for (const [k, value] of entries) {
    envName(k, `env.${k}`);
    if (value === null && allowNull) out[k] = null;
    else if (typeof value !== 'string')
      throw invalidRequest(
        `'env.${k}' must be a string${allowNull ? ' or null (unset)' : ''}`,
        `env.${k}`,
        'invalid_type',
      );
    else if (value.length > MAX_ENV_VALUE || value.includes('\0'))
      throw invalidRequest(
        `'env.${k}' must be at most ${MAX_ENV_VALUE} characters, without NUL`,
        `env.${k}`,
        'invalid_value',
      );
    else out[k] = value;
  }
  return out;
}

/** The limits hold for the env an app ends up with, whatever the request adds to it. */
function envFits(env: Record<string, string>): void {
  const names = Object.keys(env);
  if (names.length > MAX_ENV)
    throw invalidRequest(
      `'env' may hold at most ${MAX_ENV} variables (this would make ${names.length})`,
      'env',
      'invalid_value',
    );
  let bytes = 0;
  for (const k of names) bytes += Buffer.byteLength(k) + Buffer.byteLength(env[k]!) + 2;
  if (bytes > MAX_ENV_BYTES)
    throw invalidRequest(
      `'env' may hold at most ${MAX_ENV_BYTES} bytes of names and values (this would make ${bytes})`,
      'env',
      'invalid_value',
    );
}

function noClash(envNames: readonly string[], keyEnv: string | null | undefined): void {
  if (keyEnv && envNames.includes(keyEnv))
    throw invalidRequest(`'apiKeyEnv' ${keyEnv} is also set in 'env'`, 'apiKeyEnv', 'invalid_value');
}

export function parseAppInput(body: unknown): AppInput {
  const b = object(body);
  onlyFields(b, ['name', 'env', 'apiKeyEnv', 'healthPath']);
  const input: AppInput = {
    name: name(b.name),
    env: b.env === undefined ? {} : (env(b.env, false) as Record<string, string>),
    apiKeyEnv: b.apiKeyEnv === undefined ? null : apiKeyEnv(b.apiKeyEnv),
    healthPath: b.healthPath === undefined ? '/health' : healthPath(b.healthPath),
  };
  envFits(input.env);
  noClash(Object.keys(input.env), input.apiKeyEnv);
  return input;
}

/** `current`: the app's env as it is (decrypted) and its key variable. */
export function parseAppPatch(
  body: unknown,
  current: { env: Readonly<Record<string, string>>; apiKeyEnv: string | null },
): AppPatch {
  const b = object(body);
  onlyFields(b, ['name', 'env', 'apiKeyEnv', 'healthPath']);
  const patch: AppPatch = {
    name: b.name === undefined ? undefined : name(b.name),
    env: b.env === undefined ? undefined : env(b.env, true),
    apiKeyEnv: b.apiKeyEnv === undefined ? undefined : apiKeyEnv(b.apiKeyEnv),
    healthPath: b.healthPath === undefined ? undefined : healthPath(b.healthPath),
  };
  const next: Record<string, string> = { ...current.env };
  for (const [k, v] of Object.entries(patch.env ?? {})) {
    if (v === null) delete next[k];
    else next[k] = v;
  }
  if (patch.env !== undefined) envFits(next);
  if (
    patch.apiKeyEnv === undefined &&
    current.apiKeyEnv !== null &&
    typeof patch.env?.[current.apiKeyEnv] === 'string'
  ) {
    throw invalidRequest(
      `'env.${current.apiKeyEnv}': ${current.apiKeyEnv} receives the app's key (apiKeyEnv)`,
      `env.${current.apiKeyEnv}`,
      'invalid_value',
    );
  }
  noClash(Object.keys(next), patch.apiKeyEnv);
  return patch;
}

export function parseRepositoryInput(body: unknown): RepositoryInput {
  const b = object(body);
  onlyFields(b, ['repository', 'ref']);
  if (typeof b.repository !== 'string' || b.repository.trim() === '')
    throw invalidRequest(
      "'repository' must be a git URL",
      'repository',
      b.repository === undefined ? 'missing_required_parameter' : 'invalid_type',
    );
  let ref: string | null = null;
  if (b.ref !== undefined && b.ref !== null) {
    if (typeof b.ref !== 'string' || !/^[\w./@+-]{1,256}$/.test(b.ref) || b.ref.startsWith('-') || b.ref.includes('..'))
      throw invalidRequest("'ref' must be a branch, tag or commit", 'ref', 'invalid_value');
    ref = b.ref;
  }
  return { repository: b.repository.trim(), ref };
}

export function parseRollbackInput(body: unknown): string {
  const b = object(body);
  onlyFields(b, ['deploymentId']);
  if (typeof b.deploymentId !== 'string' || b.deploymentId === '')
    throw requiredFieldError("'deploymentId' is required (a deployment id)", 'deploymentId', b.deploymentId);
  return b.deploymentId;
}
