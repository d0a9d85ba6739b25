import { ApiError } from './api-error.ts';
import { notFound } from './request-errors.ts';

/** Applications on the Yam (contract.md "Applications on the Yam"). Constructors only (README "Errors"). */

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
