import { ApiError } from './api-error.ts';

/**
 * Users, sessions and per-key limits (contract "Accounts, users and the dashboard", "Per-key limits").
 * Constructors only (README "Errors").
 */

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
