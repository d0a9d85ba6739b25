/**
 * The dashboard's one way to call Hearth: same-origin fetch with the session cookie, JSON in and out.
 * A non-2xx answer becomes an ApiFailure carrying the API's own error body (OpenAI shape), so pages
 * show what the API said. A 401 on a management call means the session is gone: the listener set
 * with `onSignedOut` sends the user back to sign in.
 */
export interface ApiErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly error: ApiErrorBody,
    readonly retryAfter: string | null,
  ) {
    super(error.message);
  }
}

let signedOutListener: (() => void) | null = null;

/** Called when a management call answers 401 (expired or revoked session). */
export function onSignedOut(listener: () => void): void {
  signedOutListener = listener;
}

/** Parses an error answer into the API's error body, or a generic one when it is not JSON. */
export async function failureOf(res: Response): Promise<ApiFailure> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON */
  }
  const e = (body as { error?: Partial<ApiErrorBody> } | null)?.error;
  const error: ApiErrorBody = {
    message: typeof e?.message === 'string' ? e.message : `${res.status} ${res.statusText || 'error'}`,
    type: typeof e?.type === 'string' ? e.type : 'http_error',
    param: typeof e?.param === 'string' ? e.param : null,
    code: typeof e?.code === 'string' ? e.code : null,
  };
  return new ApiFailure(res.status, error, res.headers.get('retry-after'));
}

export interface CallOptions {
  /** Do not treat a 401 as a lost session (sign-in, setup, the session probe). */
  allowUnauthorized?: boolean;
  body?: unknown;
  /** Sent as is (an archive upload) with this content type. */
  raw?: { data: Blob; contentType: string };
}

export async function api<T>(method: string, path: string, o: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  let body: BodyInit | undefined;
  if (o.raw) {
    headers['content-type'] = o.raw.contentType;
    body = o.raw.data;
  } else if (o.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(o.body);
  }
  const res = await fetch(path, { method, headers, body, credentials: 'same-origin' });
  if (!res.ok) {
    const failure = await failureOf(res);
    if (res.status === 401 && !o.allowUnauthorized) signedOutListener?.();
    throw failure;
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** A short line for an error of any kind. */
export function describeError(err: unknown): string {
  if (err instanceof ApiFailure) return err.error.code ? `${err.error.message} (${err.error.code})` : err.error.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
