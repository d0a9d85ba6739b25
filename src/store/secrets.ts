import { randomBytes } from 'node:crypto';
import { digestsEqual, sha256 } from '../crypto/digest.ts';

/**
 * High-entropy bearer credentials: `<prefix>_<id>_<secret>`. The id is public (it locates the record
 * without a scan); the secret carries 192 random bits and only its SHA-256 is stored. A slow KDF is not
 * needed for random secrets of this size, and keeps lookups to microseconds.
 */
export type CredentialPrefix = 'hk' | 'hp';

export interface IssuedCredential {
  id: string;
  /** The whole credential, shown once. */
  plaintext: string;
  /** hex SHA-256 of the secret part. */
  secretHash: string;
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function randomId(length = 12): string {
  const bytes = randomBytes(length);
  let id = '';
  for (let i = 0; i < length; i++) id += ID_ALPHABET[bytes[i]! % ID_ALPHABET.length];
  return id;
}

let lastIdMs = 0;
let idCounter = 0;

/**
 * A 16-char id that sorts in creation order within a process (9 chars of base-36 milliseconds, 2 of a
 * same-millisecond counter) and stays unguessable enough to name records (5 random chars). Lists of
 * workspaces and projects use it to break ties between records created in the same millisecond.
 */
export function sortableId(): string {
  const now = Date.now();
  idCounter = now === lastIdMs ? idCounter + 1 : 0;
  lastIdMs = now;
  return now.toString(36).padStart(9, '0') + (idCounter % 1296).toString(36).padStart(2, '0') + randomId(5);
}

export function sha256Hex(text: string): string {
  return sha256(text).toString('hex');
}

export function issueCredential(prefix: CredentialPrefix, id = randomId()): IssuedCredential {
  const secret = randomBytes(24).toString('base64url'); // 192 bits
  return { id, plaintext: `${prefix}_${id}_${secret}`, secretHash: sha256Hex(secret) };
}

/** Longest credential id accepted (issued ids are 12 characters); a longer one is malformed. */
export const MAX_CREDENTIAL_ID_LENGTH = 64;
const MAX_SECRET_LENGTH = 256;

/**
 * Splits a presented credential `<prefix>_<id>_<secret>`: the id runs from after the prefix to the FIRST
 * `_` (ids are [a-z0-9]), the secret is everything after it (base64url, so it may itself contain `_`).
 * Null when it is not of the expected shape, including an id or secret over its bound.
 */
export function parseCredential(prefix: CredentialPrefix, presented: string): { id: string; secret: string } | null {
  if (presented.length > prefix.length + 2 + MAX_CREDENTIAL_ID_LENGTH + MAX_SECRET_LENGTH) return null;
  if (!presented.startsWith(`${prefix}_`)) return null;
  const rest = presented.slice(prefix.length + 1);
  const sep = rest.indexOf('_');
  if (sep <= 0) return null;
  const id = rest.slice(0, sep);
  const secret = rest.slice(sep + 1);
  if (
    id.length > MAX_CREDENTIAL_ID_LENGTH ||
    !/^[a-z0-9]+$/.test(id) ||
    secret.length < 16 ||
    secret.length > MAX_SECRET_LENGTH
  )
    return null;
  return { id, secret };
}

/**
 * What a well-formed credential whose id is unknown is compared against, so that path hashes and compares
 * exactly like a known id with a wrong secret (no timing difference tells which ids exist). Matches nothing:
 * the hash of 32 random bytes nobody knows.
 */
export const UNKNOWN_ID_SECRET_HASH = sha256Hex(randomBytes(32).toString('base64url'));

/** Constant-time comparison of sha256(secret) against a stored hex hash. */
export function secretMatches(secret: string, storedHashHex: string): boolean {
  return digestsEqual(sha256(secret), Buffer.from(storedHashHex, 'hex'));
}
