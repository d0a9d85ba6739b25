import { ApiError } from './api-error.ts';
import { echoed } from './request-errors.ts';

/**
 * The service cannot answer it now or at all: an unknown model, a full queue, a model warming up or failed, shutdown,
 * an internal error, the records database or the dashboard unavailable. Constructors only (README "Errors").
 */

/** `served`: the ids this server serves, named in the message so a caller sees what to ask for instead. */
export const modelNotFound = (model: string, served: readonly string[] = []) =>
  new ApiError({
    status: 404,
    type: 'not_found_error',
    message:
      `The model '${echoed(model)}' does not exist` +
      (served.length > 0
        ? `; this server serves: ${served.slice(0, 20).join(', ')}${served.length > 20 ? `, and ${served.length - 20} more (GET /models)` : ''}`
        : ''),
    param: 'model',
    code: 'model_not_found',
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

/**
 * A request whose client closed its connection before the answer (nginx's 499): nothing is sent (the exchange is
 * gone); it ends the request's work and names the end in the log.
 */
export const clientClosedRequest = () =>
  new ApiError({
    status: 499,
    type: 'invalid_request_error',
    message: 'The client closed its connection before the answer',
    param: null,
    code: 'client_closed_request',
  });

export const internalError = () =>
  new ApiError({
    status: 500,
    type: 'server_error',
    message: 'Internal server error',
    param: null,
    code: 'internal_error',
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
