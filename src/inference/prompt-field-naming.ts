import { ApiError } from '../errors/index.ts';
import type { GenerationAnswer } from './generation-route.ts';

/**
 * The engine names a prompt that cannot fit the context after chat's field (`context_length_exceeded`, param
 * `messages`); an API whose prompt is another field (completions' `prompt`, Responses' `input`) names its own.
 */
export function namingPromptAs(field: string, e: unknown): unknown {
  if (!(e instanceof ApiError) || e.code !== 'context_length_exceeded' || e.param !== 'messages') return e;
  return new ApiError({
    ...e.toData(),
    param: field,
    message: e.message
      .replace('the messages use', `'${field}' uses`)
      .replace('Shorten the messages', `Shorten '${field}'`),
  });
}

/** `start` with its refusals (thrown, or failed on the sink) naming `field` as namingPromptAs does. */
export function startNamingPromptAs(field: string, start: GenerationAnswer['start']): GenerationAnswer['start'] {
  return (sink, caller, model) => {
    const named = {
      push: (delta: Parameters<typeof sink.push>[0]) => sink.push(delta),
      fail: (e: ApiError) => sink.fail(namingPromptAs(field, e) as ApiError),
    };
    try {
      return start(named, caller, model);
    } catch (e) {
      throw namingPromptAs(field, e);
    }
  };
}
