/** Resolves a presented bearer key to its owner, or throws `unauthorized()` (401). Implemented by the key store. */
export interface KeyAuthenticator {
  authenticate(presented: string | undefined): { keyId: string; accountId: string };
}
