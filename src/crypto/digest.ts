import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The one way a presented secret is checked, shared by the records (API keys, project tokens, sessions) and
 * the standalone tool-server kit: SHA-256 of the UTF-8 text, compared in constant time, so neither the
 * secret's content nor its length leaks through timing. A leaf: imports nothing of Hearth.
 */
export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Constant-time equality of two digests (false when their lengths differ). */
export function digestsEqual(presented: Buffer, stored: Buffer): boolean {
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
