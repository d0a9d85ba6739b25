import type { ApiError } from './api-error.ts';

/** Anthropic's error body, as `@anthropic-ai/sdk` reads it (the Messages API routes answer errors so). */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string } & Record<string, unknown>;
}

/**
 * An ApiError in Anthropic's shape `{"type":"error","error":{"type","message"}}`: the same status, the type
 * Anthropic uses for that status (invalid_request_error, authentication_error, permission_error,
 * not_found_error, request_too_large, rate_limit_error, overloaded_error for 503s, api_error otherwise).
 * Hearth's own `code` and `param`, and the details, ride along in the error object (Anthropic's SDK ignores them).
 */
export function anthropicErrorBody(err: ApiError): AnthropicErrorBody {
  return {
    type: 'error',
    error: { ...(err.details ?? {}), type: anthropicType(err), message: err.message, code: err.code, param: err.param },
  };
}

function anthropicType(err: ApiError): string {
  switch (err.status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
      return 'overloaded_error';
    default:
      return err.status >= 400 && err.status < 500 ? 'invalid_request_error' : 'api_error';
  }
}
