import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

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
  return createHash('sha256').update(text).digest('hex');
}

export function issueCredential(prefix: CredentialPrefix, id = randomId()): IssuedCredential {
  const secret = randomBytes(24).toString('base64url'); // 192 bits
  return { id, plaintext: `${prefix}_${id}_${secret}`, secretHash: sha256Hex(secret) };
}

/** Splits a presented credential; null when it is not of the expected shape. */
export function parseCredential(prefix: CredentialPrefix, presented: string): { id: string; secret: string } | null {
  if (!presented.startsWith(`${prefix}_`)) return null;
  const rest = presented.slice(prefix.length + 1);
  const sep = rest.indexOf('_');
  if (sep <= 0) return null;
  const id = rest.slice(0, sep);
  const secret = rest.slice(sep + 1);
  if (!/^[a-z0-9]+$/.test(id) || secret.length < 16 || secret.length > 256) return null;
  return { id, secret };
}

/** Constant-time comparison of sha256(secret) against a stored hex hash. */
export function secretMatches(secret: string, storedHashHex: string): boolean {
  const presented = createHash('sha256').update(secret).digest();
  const stored = Buffer.from(storedHashHex, 'hex');
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
