/**
 * The secret part of a Hearth credential `<hk|hp>_<id>_<secret>`: everything after the id's `_`. The secret
 * is base64url and may itself contain `_`, so a credential must never be split on every `_`. Any other
 * string (e.g. a provider key) is returned whole.
 */
export function secretPart(credential: string): string {
  const m = /^(?:hk|hp)_[a-z0-9]+_(.+)$/s.exec(credential);
  return m ? m[1]! : credential;
}
