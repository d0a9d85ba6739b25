import { invalidRequest } from '../errors/index.ts';

/**
 * Where a generation is scheduled (contract "Fair share and priority between tenants"): `interactive` work
 * before `batch` work, and a batch generation holding a slot yields it to interactive work that waits. A key
 * has one (its limits, default interactive); a request may only lower its own.
 */
export type Priority = 'interactive' | 'batch';

export const PRIORITIES = ['interactive', 'batch'] as const satisfies readonly Priority[];

/**
 * A request body's `priority` (chat completions, completions, responses, messages): absent or null = the key's;
 * `"batch"` lowers it. Any other value (`"interactive"` included: a request never raises its priority, and a
 * batch key's request that asked for it would be refused anyway) is a 400 naming `priority`.
 */
export function parseRequestPriority(value: unknown): 'batch' | undefined {
  if (value === undefined || value === null) return undefined;
  if (value !== 'batch')
    throw invalidRequest(
      `'priority' must be "batch" (a request may lower its key's priority, never raise it); got ${JSON.stringify(value)?.slice(0, 40) ?? typeof value}`,
      'priority',
      'invalid_value',
    );
  return 'batch';
}

/** The priority a request runs at: the key's, lowered to batch when the request asked for it. */
export function effectivePriority(keyPriority: Priority, requested: 'batch' | undefined): Priority {
  return requested === 'batch' ? 'batch' : keyPriority;
}
