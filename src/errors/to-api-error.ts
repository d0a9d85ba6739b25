import { ApiError, isApiErrorData } from './api-error.ts';
import { engineFailureDetail, engineFailureToApiError, isEngineFailure } from './engine-failure.ts';
import { internalError } from './errors.ts';

/** Logger hook for unmapped errors; main.ts points it at the real logger. */
let reportUnmapped: (err: unknown) => void = (err) => console.error('[hearth] unmapped error', err);
export function setUnmappedErrorReporter(fn: (err: unknown) => void): void {
  reportUnmapped = fn;
}

/**
 * The one mapper from anything thrown (or posted by a model worker) to an ApiError. Unknown errors and
 * engine failures become the generic 500 internal_error; their details go to the log only, never to the client.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isApiErrorData(err)) return ApiError.fromData(err);
  if (isEngineFailure(err)) {
    const mapped = engineFailureToApiError(err);
    const detail = engineFailureDetail(err);
    if (mapped.status >= 500 && detail !== undefined)
      reportUnmapped(new Error(`engine failure (${err.code}): ${detail}`));
    return mapped;
  }
  if (
    typeof err === 'object' &&
    err !== null &&
    'apiError' in err &&
    isApiErrorData((err as { apiError: unknown }).apiError)
  ) {
    return ApiError.fromData((err as { apiError: Parameters<typeof ApiError.fromData>[0] }).apiError);
  }
  reportUnmapped(err);
  return internalError();
}
