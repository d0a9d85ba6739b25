/** The error every provider throws when the caller's signal aborts: a DOMException named 'AbortError'. */
export function clientAbortError(): DOMException {
  return new DOMException('The upstream call was aborted: the client went away', 'AbortError');
}

export function isAbortError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';
}
