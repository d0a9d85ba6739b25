/**
 * The one error hierarchy of Hearth. Every failure a client can see is an ApiError; it serializes to
 * OpenAI's error body `{"error":{"message","type","param","code"}}`. Errors cross threads as
 * `ApiErrorData` (plain data) and are rebuilt with `ApiError.fromData` on the main thread.
 */
export type ApiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'unavailable_error'
  | 'upstream_error'
  | 'server_error';

export interface ApiErrorData {
  status: number;
  message: string;
  type: ApiErrorType;
  code: string | null;
  param: string | null;
  /** Seconds; sent as the Retry-After header when set. */
  retryAfter?: number | undefined;
  /** Extra fields merged into the error object (e.g. warm-up progress). Never secrets. */
  details?: Record<string, unknown> | undefined;
}

export interface ApiErrorBody {
  error: { message: string; type: ApiErrorType; param: string | null; code: string | null } & Record<string, unknown>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly type: ApiErrorType;
  readonly code: string | null;
  readonly param: string | null;
  readonly retryAfter: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(data: ApiErrorData) {
    super(data.message);
    this.name = 'ApiError';
    this.status = data.status;
    this.type = data.type;
    this.code = data.code;
    this.param = data.param;
    this.retryAfter = data.retryAfter;
    this.details = data.details;
  }

  static fromData(data: ApiErrorData): ApiError {
    return new ApiError(data);
  }

  toData(): ApiErrorData {
    return {
      status: this.status,
      message: this.message,
      type: this.type,
      code: this.code,
      param: this.param,
      retryAfter: this.retryAfter,
      details: this.details,
    };
  }

  toBody(): ApiErrorBody {
    return {
      error: { ...(this.details ?? {}), message: this.message, type: this.type, param: this.param, code: this.code },
    };
  }
}

export function isApiErrorData(value: unknown): value is ApiErrorData {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.status === 'number' && typeof v.message === 'string' && typeof v.type === 'string';
}
