import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto';

/**
 * Password hashing with scrypt (memory-hard). The encoded hash carries its own parameters,
 * `scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>`, so stronger defaults later still verify old hashes.
 * Runs on libuv's thread pool (async scrypt): the event loop is never blocked by a hash.
 */
export interface ScryptParams {
  /** CPU/memory cost, a power of two. Memory used is 128 * N * r bytes (32 MiB at the defaults). */
  N: number;
  r: number;
  p: number;
}

export const DEFAULT_SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const satisfies Required<ScryptParams>;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Bounds on stored parameters: a corrupt or hostile record must not make verification allocate without limit. */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;
/** Longer passwords are refused at the edge; this is the hash's own guard. */
export const MAX_PASSWORD_BYTES = 4096;

function derive(password: string, salt: Buffer, params: ScryptParams, length: number): Promise<Buffer> {
  const options: ScryptOptions = {
    N: params.N,
    r: params.r,
    p: params.p,
    maxmem: 256 * params.N * params.r * params.p + 1024 * 1024,
  };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, length, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT_PARAMS): Promise<string> {
  if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) throw new Error('password too long');
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, params, HASH_BYTES);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

interface DecodedHash {
  params: ScryptParams;
  salt: Buffer;
  hash: Buffer;
}

function decode(encoded: string): DecodedHash | null {
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const isPow2 = Number.isInteger(N) && N > 1 && (N & (N - 1)) === 0;
  if (!isPow2 || N > MAX_N || !Number.isInteger(r) || r < 1 || r > MAX_R || !Number.isInteger(p) || p < 1 || p > MAX_P)
    return null;
  const salt = Buffer.from(parts[4]!, 'base64');
  const hash = Buffer.from(parts[5]!, 'base64');
  if (salt.length < 8 || hash.length < 16 || hash.length > 64) return null;
  return { params: { N, r, p }, salt, hash };
}

/** Constant-time check of `password` against an encoded hash. False (never a throw) for a malformed hash. */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  if (Buffer.byteLength(password) > MAX_PASSWORD_BYTES) return false;
  const d = decode(encoded);
  if (d === null) return false;
  const derived = await derive(password, d.salt, d.params, d.hash.length);
  return timingSafeEqual(derived, d.hash);
}

let dummyHash: Promise<string> | null = null;

/**
 * Spends the same work as a real verification and answers false: used when no user has the email, so a
 * sign-in for an unknown email takes as long as one with a wrong password (no account enumeration by timing).
 */
export async function verifyAgainstNothing(password: string): Promise<false> {
  dummyHash ??= hashPassword('not a password of anyone');
  await verifyPassword(password, await dummyHash);
  return false;
}
