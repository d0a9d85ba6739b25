import { ApiError } from './api-error.ts';

/** Constructors for every error condition Hearth documents (README "Errors"). */

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

export const malformedJson = (detail: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `Request body is not valid JSON: ${detail}`,
    param: null,
    code: 'invalid_json',
  });

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

export const notFound = (message: string, code: string) =>
  new ApiError({ status: 404, type: 'not_found_error', message, param: null, code });

export const responseNotFound = (id: string, param: string | null = null) =>
  new ApiError({
    status: 404,
    type: 'invalid_request_error',
    message: `Response with id '${id}' not found.`,
    param,
    code: param === null ? 'response_not_found' : 'previous_response_not_found',
  });

/** `served`: the ids this server serves, named in the message so a caller sees what to ask for instead. */
export const modelNotFound = (model: string, served: readonly string[] = []) =>
  new ApiError({
    status: 404,
    type: 'not_found_error',
    message:
      `The model '${model}' does not exist` +
      (served.length > 0
        ? `; this server serves: ${served.slice(0, 20).join(', ')}${served.length > 20 ? `, and ${served.length - 20} more (GET /models)` : ''}`
        : ''),
    param: 'model',
    code: 'model_not_found',
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

export const queueFull = (retryAfter = 1) =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: 'The server is at capacity; retry shortly',
    param: null,
    code: 'queue_full',
    retryAfter,
  });

export const rateLimited = (retryAfter = 1) =>
  new ApiError({
    status: 429,
    type: 'rate_limit_error',
    message: 'Rate limit reached; retry shortly',
    param: null,
    code: 'rate_limit_exceeded',
    retryAfter,
  });

export const modelWarmingUp = (details: Record<string, unknown>) =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: 'The model is warming up (first-time pull and load); retry in about 2 minutes',
    param: null,
    code: 'model_warming_up',
    retryAfter: 120,
    details,
  });

/** A model registry conflict (contract.md "Several models on one server"): an id taken (`model_exists`), a model busy (`model_busy`). */
export const conflict = (message: string, code: 'model_exists' | 'model_busy') =>
  new ApiError({
    status: 409,
    type: 'invalid_request_error',
    message,
    param: code === 'model_exists' ? 'id' : null,
    code,
  });

/**
 * The reason (an engine's or the pull's own message) is the operator's: GET /health and the log show it, clients
 * do not. `unreachable` is the one reason clients get: a hub host that could not be resolved or reached.
 */
export const modelFailed = (unreachable?: string) =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message:
      unreachable === undefined
        ? 'The model failed to pull or load; GET /health and the server log say why'
        : `The model could not be pulled: ${unreachable}. GET /health says how to serve a local file instead`,
    param: null,
    code: 'model_failed',
  });

export const shuttingDown = () =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: 'The server is shutting down',
    param: null,
    code: 'shutting_down',
    retryAfter: 5,
  });

export const internalError = () =>
  new ApiError({
    status: 500,
    type: 'server_error',
    message: 'Internal server error',
    param: null,
    code: 'internal_error',
  });

// Workspace / project conditions (service-spec section 7; contract.md).
export const workspaceNotFound = () =>
  new ApiError({
    status: 404,
    type: 'not_found_error',
    message: 'Workspace not found',
    param: 'workspaceId',
    code: 'workspace_not_found',
  });

export const noYamConfigured = () =>
  new ApiError({
    status: 409,
    type: 'invalid_request_error',
    message: 'No Yam configured: the workspace Yam is missing or not ready',
    param: null,
    code: 'no_yam_configured',
  });

export const projectNotReady = (state: string) =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: 'Inference project is not ready',
    param: null,
    code: 'project_not_ready',
    retryAfter: 30,
    details: { state },
  });

export const providerConfigurationMissing = (what: string) =>
  new ApiError({
    status: 500,
    type: 'server_error',
    message: `Provider configuration missing: ${what}`,
    param: null,
    code: 'provider_configuration_missing',
  });

export const upstreamError = (provider: string, status: number, message: string) =>
  new ApiError({
    status: 502,
    type: 'upstream_error',
    message: `Upstream provider ${provider} failed (${status}): ${message}`,
    param: null,
    code: String(status),
  });

export const upstreamTimeout = (provider: string, ms: number) =>
  new ApiError({
    status: 504,
    type: 'upstream_error',
    message: `Upstream provider ${provider} did not answer within ${ms} ms`,
    param: null,
    code: 'timeout',
  });

/** The whole upstream answer (retries included) did not complete within the call's deadline (--provider-deadline-ms). */
export const upstreamDeadline = (provider: string, ms: number) =>
  new ApiError({
    status: 504,
    type: 'upstream_error',
    message: `Upstream provider ${provider} did not complete its answer within the ${ms} ms deadline`,
    param: null,
    code: 'deadline_exceeded',
  });

/** Upstream 429 still failing after Hearth's retries (or asking for a longer wait than Hearth will hold a request). */
export const upstreamRateLimited = (provider: string, message: string, retryAfter?: number) =>
  new ApiError({
    status: 429,
    type: 'rate_limit_error',
    message: `Upstream provider ${provider} rate-limited the request: ${message}`,
    param: null,
    code: 'upstream_rate_limited',
    retryAfter,
  });

/** The upstream could not be reached, or answered something that is not its documented wire format. */
export const upstreamBadResponse = (provider: string, detail: string, code = 'bad_response') =>
  new ApiError({
    status: 502,
    type: 'upstream_error',
    message: `Upstream provider ${provider} failed: ${detail}`,
    param: null,
    code,
  });

// Applications on the Yam (contract.md "Applications on the Yam").
export const appNotFound = () => notFound('App not found', 'app_not_found');

export const deploymentNotFound = () => notFound('Deployment not found', 'deployment_not_found');

export const invalidArchive = (detail: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `Invalid archive: ${detail}`,
    param: null,
    code: 'invalid_archive',
  });

export const repositoryUnreachable = (detail: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `Repository unreachable: ${detail}`,
    param: 'repository',
    code: 'repository_unreachable',
  });

/** `detail` says why and names `--app-repositories` (apps/repository-policy.ts). */
export const repositoryNotAllowed = (detail: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    message: `Repository not allowed: ${detail}`,
    param: 'repository',
    code: 'repository_not_allowed',
  });

export const appNotLive = (retryAfter: number) =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: 'The app has no live deployment right now',
    param: null,
    code: 'app_not_live',
    retryAfter,
  });
/** A fleet replica started with --app-host false: apps and their API live on the fleet's app host (docs/fleet.md). */
export const appHostUnavailable = () =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: "This replica does not run apps (--app-host false): send app requests to the fleet's app host",
    param: null,
    code: 'app_host_unavailable',
    retryAfter: 5,
  });
// Users, sessions and per-key limits (contract "Accounts, users and the dashboard", "Per-key limits").
export const invalidCredentials = () =>
  new ApiError({
    status: 401,
    type: 'authentication_error',
    message: 'Wrong email or password',
    param: null,
    code: 'invalid_credentials',
  });

export const sessionExpired = () =>
  new ApiError({
    status: 401,
    type: 'authentication_error',
    message: 'The session has ended (expired, signed out or the user was removed); sign in again',
    param: null,
    code: 'session_expired',
  });

export const invalidSetupToken = () =>
  new ApiError({
    status: 401,
    type: 'authentication_error',
    message: 'The setup token is wrong, already used or expired; restart the server to get a fresh setup link',
    param: 'token',
    code: 'invalid_setup_token',
  });

export const setupComplete = () =>
  new ApiError({
    status: 409,
    type: 'invalid_request_error',
    message: 'Setup is complete: a user exists already; sign in instead',
    param: null,
    code: 'setup_complete',
  });

export const originMismatch = () =>
  new ApiError({
    status: 403,
    type: 'permission_error',
    message: "A change made with a session cookie needs an Origin header equal to the service's own origin",
    param: null,
    code: 'origin_mismatch',
  });

export const ownerRequired = (what = 'users') =>
  new ApiError({
    status: 403,
    type: 'permission_error',
    message: `Managing ${what} needs an owner's session (members and API keys cannot)`,
    param: null,
    code: 'owner_required',
  });

export const userNotFound = () =>
  new ApiError({
    status: 404,
    type: 'not_found_error',
    message: 'User not found',
    param: 'userId',
    code: 'user_not_found',
  });

export const emailTaken = () =>
  new ApiError({
    status: 409,
    type: 'invalid_request_error',
    message: 'A user with this email exists already',
    param: 'email',
    code: 'email_taken',
  });

export const lastOwner = () =>
  new ApiError({
    status: 409,
    type: 'invalid_request_error',
    message: 'The last owner of an account cannot be removed; add another owner first',
    param: 'userId',
    code: 'last_owner',
  });

export const tooManySignInAttempts = (retryAfter: number) =>
  new ApiError({
    status: 429,
    type: 'rate_limit_error',
    message: `Too many failed sign-ins; retry in ${retryAfter} s`,
    param: null,
    code: 'too_many_sign_in_attempts',
    retryAfter,
  });

/** A per-key limit of the shared endpoint; `limit` names which one (requests, tokens, concurrent). */
export const keyRateLimited = (
  message: string,
  param: string,
  limit: 'requests' | 'tokens' | 'concurrent',
  retryAfter: number,
) =>
  new ApiError({
    status: 429,
    type: 'rate_limit_error',
    message,
    param,
    code: 'rate_limit_exceeded',
    retryAfter,
    details: { limit },
  });

/** The dashboard's files are missing (web/dist was never built). */
export const dashboardNotBuilt = () =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: 'The dashboard is not built: run `npm run build:web` (npm ci does it)',
    param: null,
    code: 'dashboard_not_built',
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

/**
 * The records database (PostgreSQL) could not be reached in time: the write was not made (`write`), or a read that
 * must see every replica's writes could not be brought up to date (`read`); retry shortly.
 */
export const storeUnavailable = (retryAfter = 5, failed: 'write' | 'read' = 'write') =>
  new ApiError({
    status: 503,
    type: 'unavailable_error',
    message: `The records database is unavailable; ${failed === 'write' ? 'the change was not saved' : 'the records could not be read'}. Retry shortly (GET /health says why)`,
    param: null,
    code: 'store_unavailable',
    retryAfter,
  });
