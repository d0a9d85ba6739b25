import type { Priority } from '../protocol/priority.ts';

/**
 * Who may reuse the prompt-cache state a request leaves (issue #28). Every cache that can answer "this
 * prefix was seen" (a slot's KV, the native host prompt cache) is keyed by a partition derived from the
 * caller, so a prompt of one account never matches, and `cached_tokens` / time to first token never reveal,
 * another account's prompts.
 * - `account` (the default): every key of an account shares one partition, app keys included (an app's key
 *   belongs to its workspace owner's account).
 * - `key`: one partition per API key (an account's keys do not share cached prompts either).
 * - `global`: one partition for everyone; safe only when a single tenant uses the server.
 */
export type PromptCacheScope = 'account' | 'key' | 'global';

export const PROMPT_CACHE_SCOPES = ['account', 'key', 'global'] as const satisfies readonly PromptCacheScope[];

/** The authenticated sender of a shared-endpoint request. */
export interface InferenceCaller {
  keyId: string;
  accountId: string;
  /** The key's priority (its limits); a request may lower it (protocol/priority.ts). */
  priority: Priority;
}

/** The cache partition of a caller's requests under `scope` (opaque to the engine; '' = the shared one). */
export function cachePartitionOf(scope: PromptCacheScope, caller: InferenceCaller): string {
  switch (scope) {
    case 'account':
      return `account:${caller.accountId}`;
    case 'key':
      return `key:${caller.keyId}`;
    case 'global':
      return '';
  }
}
