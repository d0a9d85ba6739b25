import { ApiError } from '../errors/index.ts';
import type { ChatDeltaSink } from '../protocol/chat-delta.ts';
import type { GenerationAnswer } from './generation-route.ts';

/** Chat's field names -> another API's own, for the refusals the engine and gateway name after chat's fields. */
export type FieldNames = Readonly<Record<string, string>>;

/** Completions' prompt is `prompt`. */
export const COMPLETIONS_FIELDS: FieldNames = { messages: 'prompt' };
/** Responses' prompt is `input`, its reasoning effort `reasoning.effort`, its token budget `max_output_tokens`. */
export const RESPONSES_FIELDS: FieldNames = {
  messages: 'input',
  reasoning_effort: 'reasoning.effort',
  max_tokens: 'max_output_tokens',
};

/**
 * The engine and the gateway name a refusal after chat's fields (`context_length_exceeded` names `messages`, a
 * model without a thinking switch `reasoning_effort`); an API whose field is called otherwise names its own.
 */
export function namingFieldsAs(names: FieldNames, e: unknown): unknown {
  if (!(e instanceof ApiError) || e.param === null || !Object.hasOwn(names, e.param)) return e;
  const from = e.param;
  const to = names[from]!;
  return new ApiError({
    ...e.toData(),
    param: to,
    message: e.message
      .replace(`'${from}'`, `'${to}'`)
      .replace(`the ${from} use`, `'${to}' uses`)
      .replace(`Shorten the ${from}`, `Shorten '${to}'`)
      .replace(
        ' or max_tokens.',
        Object.hasOwn(names, 'max_tokens') ? ` or '${names.max_tokens}'.` : ' or max_tokens.',
      ),
  });
}

/** `start` with its refusals (thrown, or failed on the sink) naming the API's fields as namingFieldsAs does. */
export function startNamingFieldsAs(names: FieldNames, start: GenerationAnswer['start']): GenerationAnswer['start'] {
  return (sink, caller, model) => {
    const named: ChatDeltaSink = {
      push: (delta) => sink.push(delta),
      fail: (e) => sink.fail(namingFieldsAs(names, e) as ApiError),
    };
    try {
      return start(named, caller, model);
    } catch (e) {
      throw namingFieldsAs(names, e);
    }
  };
}
