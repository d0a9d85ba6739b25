/**
 * The tool server's bearer check: `Authorization: Bearer <key>` against one configured key.
 * The comparison is constant-time over SHA-256 digests, so neither the key's content nor its length
 * leaks through timing. The key itself is hashed once at construction and not kept.
 */
import { digestsEqual, sha256 } from '../crypto/digest.ts';
import { bearerToken } from '../http/router.ts';

export class BearerAuth {
  readonly #keyDigest: Buffer | null;

  /** `apiKey` null: every request passes (an open server, the application's explicit choice). */
  constructor(apiKey: string | null) {
    if (apiKey !== null && (typeof apiKey !== 'string' || apiKey === '' || /\s/.test(apiKey))) {
      throw new TypeError(
        'apiKey must be a non-empty string without whitespace, or null to serve without authentication',
      );
    }
    this.#keyDigest = apiKey === null ? null : sha256(apiKey);
  }

  get enabled(): boolean {
    return this.#keyDigest !== null;
  }

  /** `authorization` is the raw header value ('' when absent). */
  accepts(authorization: string): boolean {
    if (this.#keyDigest === null) return true;
    const token = bearerToken(authorization);
    // Always compare, even for a missing header, so every rejection costs the same.
    return digestsEqual(sha256(token ?? ''), this.#keyDigest) && token !== undefined;
  }
}
