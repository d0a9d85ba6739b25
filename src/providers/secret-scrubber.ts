import { ApiError } from '../errors/api-error.ts';

const KEY_LIKE = /\b(?:sk-[A-Za-z0-9_*.-]{6,}|AIza[0-9A-Za-z_-]{10,})/g;
const TOKEN_LIKE = /[A-Za-z0-9_-]{8,}/g;

const BASE64_LIKE = /[A-Za-z0-9+/_-]{12,}={0,2}/g;
const WITHHELD = '[the upstream message was withheld: it spelled out the provider key]';

/**
 * Removes `secrets`, any 8+ character run that is part of a secret, the secret in base64 (as a `Basic` header or a
 * token would carry it), and key-shaped tokens; text that spells a secret out with separators between its
 * characters (`s k - a b c ...`) is withheld whole.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  const letters = (t: string) => t.replace(/[^A-Za-z0-9]/g, '');
  if (secrets.some((s) => letters(s).length >= 12 && letters(out).includes(letters(s)))) return WITHHELD;
  out = out.replace(TOKEN_LIKE, (token) =>
    secrets.some((s) => s.length >= 8 && s.includes(token)) ? '[redacted]' : token,
  );
  const encoded = secrets.filter((s) => s.length >= 12).flatMap(base64Cores);
  if (encoded.length > 0)
    out = out.replace(BASE64_LIKE, (token) => (encoded.some((c) => token.includes(c)) ? '[redacted]' : token));
  return out.replace(KEY_LIKE, '[redacted]');
}

/**
 * The parts of `secret`'s base64 and base64url that stay the same wherever it starts in the encoded bytes (three
 * alignments; the characters that mix in a neighbouring byte left out at both ends).
 */
function base64Cores(secret: string): string[] {
  const out: string[] = [];
  for (let pad = 0; pad < 3; pad++) {
    const b64 = Buffer.from('\0'.repeat(pad) + secret).toString('base64');
    const start = pad === 0 ? 0 : 4; // the first group holds the padding bytes
    const core = b64.slice(start, Math.floor(((pad + secret.length) / 3) * 4) - 4);
    if (core.length >= 8) out.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/**
 * The one scrubber of an upstream call: knows the secret in play (the call's provider key). scrub() cleans
 * every text that came from upstream before it goes into an error (error bodies, in-stream error events of
 * all four vendors, network error descriptions): the key, fragments of it and anything key-shaped.
 * scrubError() is the safety net HttpChatProvider applies to every error it throws, whatever built it: it
 * removes the whole key and key-shaped tokens (not fragments: Hearth's own words, such as the provider's
 * name, may well be part of a key). One per call.
 */
export class SecretScrubber {
  private readonly secrets: readonly string[];

  constructor(secrets: readonly string[]) {
    this.secrets = secrets.filter((s) => s.length > 0);
  }

  /** Upstream text -> text without the key, its 8+ character fragments, or key-shaped tokens. */
  scrub(text: string): string {
    return scrubSecrets(text, this.secrets);
  }

  /** An ApiError with the key and key-shaped tokens removed from its message, param and details; anything else as is. */
  scrubError(err: unknown): unknown {
    if (!(err instanceof ApiError)) return err;
    const data = err.toData();
    const clean = (text: string) => this.removeWhole(text);
    const message = clean(data.message);
    const param = data.param === null ? null : clean(data.param);
    const detailsText = data.details === undefined ? undefined : JSON.stringify(data.details);
    const cleanDetails = detailsText === undefined ? undefined : clean(detailsText);
    if (message === data.message && param === data.param && cleanDetails === detailsText) return err;
    const details = cleanDetails === undefined ? undefined : (JSON.parse(cleanDetails) as Record<string, unknown>);
    return new ApiError({ ...data, message, param, details });
  }

  private removeWhole(text: string): string {
    let out = text;
    for (const secret of this.secrets) {
      if (secret.length >= 4) out = out.split(secret).join('[redacted]');
    }
    return out.replace(KEY_LIKE, '[redacted]');
  }
}
