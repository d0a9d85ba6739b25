import { ApiError } from './api-error.ts';

/**
 * The request itself is wrong or not allowed (400, 401, 404, 405, 413, 415): bad parameters, bodies, paths, headers
 * and routes. Constructors only; each returns a new ApiError (README "Errors").
 */

export const invalidRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new ApiError({ status: 400, type: 'invalid_request_error', message, param, code });

export const unsupportedParameter = (param: string, why = 'is not supported') =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `'${param}' ${why}`,
    param,
    code: 'unsupported_parameter',
  });

/** `param`: where in the body (`messages[0].content`), or null for the body's own text. */
export const loneSurrogate = (param: string | null) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `${param === null ? 'The request body' : `'${param}'`} is not valid Unicode text: it holds a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair)`,
    param,
    code: 'invalid_unicode',
  });

export const malformedJson = (detail: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `Request body is not valid JSON: ${detail}`,
    param: null,
    code: 'invalid_json',
  });

/** A client's string as an error message echoes it: at most 64 characters, then '...' (README "Limits"). */
export const echoed = (s: string): string => (s.length > 64 ? `${s.slice(0, 64)}...` : s);

/** `atLeast`: the count is a lower bound (tokenizing stopped early, or it was bounded from the prompt's bytes). */
export const contextLengthExceeded = (promptTokens: number, contextSize: number, atLeast = false) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `This model's maximum context length is ${contextSize} tokens; the messages use ${atLeast ? 'at least ' : ''}${promptTokens} tokens. Shorten the messages or max_tokens.`,
    param: 'messages',
    code: 'context_length_exceeded',
  });

export const payloadTooLarge = (limitBytes: number) =>
  new ApiError({
    status: 413,
    type: 'invalid_request_error',
    message: `Request body exceeds the limit of ${limitBytes} bytes`,
    param: null,
    code: 'payload_too_large',
  });

export const unauthorized = (message = 'Unauthorized') =>
  new ApiError({ status: 401, type: 'authentication_error', message, param: null, code: 'invalid_api_key' });

/** The key of a running request was revoked (or rotated away, or deleted): the request ends here. */
export const keyRevokedMidRequest = () =>
  new ApiError({
    status: 401,
    type: 'authentication_error',
    message: 'The API key was revoked while this request ran; it was stopped',
    param: null,
    code: 'api_key_revoked',
  });

export const notFound = (message: string, code: string) =>
  new ApiError({ status: 404, type: 'not_found_error', message, param: null, code });

export const responseNotFound = (id: string, param: string | null = null) =>
  new ApiError({
    status: 404,
    type: 'invalid_request_error',
    message: `Response with id '${echoed(id)}' not found.`,
    param,
    code: param === null ? 'response_not_found' : 'previous_response_not_found',
  });

export const routeNotFound = (method: string, path: string) =>
  new ApiError({
    status: 404,
    type: 'not_found_error',
    message: `No route for ${method} ${path}`,
    param: null,
    code: 'route_not_found',
  });

export const methodNotAllowed = (method: string, path: string, allowed: string[]) =>
  new ApiError({
    status: 405,
    type: 'invalid_request_error',
    message: `Method ${method} is not allowed on ${path}; use ${allowed.join(', ')}`,
    param: null,
    code: 'method_not_allowed',
    details: { allowed },
  });

export const unsupportedMediaType = (contentType: string) =>
  new ApiError({
    status: 415,
    type: 'invalid_request_error',
    message: `Content-Type must be application/json, got '${contentType || 'none'}'`,
    param: null,
    code: 'unsupported_media_type',
  });

/** A path segment that is not valid percent-encoded UTF-8 (`%E0`, `%zz`, a lone `%`, overlong or surrogate bytes). */
export const malformedPath = () =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: 'The request path is not valid percent-encoded UTF-8',
    param: null,
    code: 'invalid_path',
  });

/**
 * A request header value holding anything but ASCII text (a byte >= 0x80): uWS hands such a value on changed
 * (README "Limits"), so it is refused rather than acted on. `name` is the header's (lower-case, from uWS).
 */
export const nonAsciiHeader = (name: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `The '${name.slice(0, 64)}' header holds bytes outside ASCII; header values must be ASCII text`,
    param: null,
    code: 'invalid_header_value',
  });

/** A JSON body nested deeper than the edge accepts (README "Limits"). */
export const jsonTooDeep = (maxDepth: number) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `Request body nests arrays/objects deeper than ${maxDepth} levels`,
    param: null,
    code: 'json_too_deep',
  });
