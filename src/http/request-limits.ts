/**
 * Bounds the HTTP edge applies to everything a client sends, before any of it reaches LMDB, a recursive
 * function or a handler (README "Limits"). Header-block size and count are uWS's own (see README).
 */
export const REQUEST_LIMITS = {
  /** Deepest array/object nesting accepted in a JSON body (checked before JSON.parse). */
  maxJsonDepth: 64,
  /** Longest raw (still percent-encoded) path parameter; longer ones name nothing that can exist (404). */
  maxPathParamLength: 1024,
  /** Longest `Authorization` header value looked at; longer ones are treated as no credential (401). */
  maxAuthorizationLength: 1024,
} as const;
