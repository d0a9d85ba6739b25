/**
 * The tool server's bearer check: `Authorization: Bearer <key>` against one configured key.
 * The comparison is constant-time over SHA-256 digests, so neither the key's content nor its length
 * leaks through timing. The key itself is hashed once at construction and not kept.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export class BearerAuth {
  readonly #keyDigest: Buffer | null;

  /** `apiKey` null: every request passes (an open server, the application's explicit choice). */
  constructor(apiKey: string | null) {
    if (apiKey !== null && (typeof apiKey !== 'string' || apiKey === '' || /\s/.test(apiKey))) {
      throw new TypeError('apiKey must be a non-empty string without whitespace, or null to serve without authentication');
    }
    this.#keyDigest = apiKey === null ? null : sha256(apiKey);
  }

  get enabled(): boolean {
    return this.#keyDigest !== null;
  }

  /** `authorization` is the raw header value ('' when absent). */
  accepts(authorization: string): boolean {
    if (this.#keyDigest === null) return true;
    const match = BEARER.exec(authorization);
    const presented = sha256(match?.[1] ?? '');
    // Always compare, even for a missing header, so every rejection costs the same.
    return timingSafeEqual(presented, this.#keyDigest) && match !== null;
  }
}
