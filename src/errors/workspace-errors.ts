import { ApiError } from './api-error.ts';

/**
 * Workspaces, their inference projects and the upstream providers a project calls (service-spec section 7;
 * contract.md). Constructors only (README "Errors").
 */

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
