import { COMPLETIONS_FIELDS, startNamingFieldsAs } from './prompt-field-naming.ts';
import { type GenerationAnswer, generationRoute, type GenerationRouteDeps } from './generation-route.ts';
import { validateCompletionsRequest } from '../protocol/completions-request.ts';
import { sseData } from '../protocol/sse.ts';
import { TextCompletionRenderer } from '../protocol/text-completion.ts';
import { type AnswerFormat } from './chat-responder.ts';
import type { Route } from '../http/router.ts';

export type CompletionsRouteDeps = GenerationRouteDeps;

/**
 * `POST /api/inference/v1/completions`: OpenAI's legacy completions API over the shared model, each prompt sent
 * raw (no chat template). The gateway runs one generation per prompt (startCompletions); their deltas are
 * rendered by TextCompletionRenderer as one `text_completion` object or as `data:` chunks ending `data: [DONE]`,
 * by the one responder (chat-responder.ts: commit late, keep-alive, backpressure, cancel on disconnect).
 */
export function completionsRoutes(d: CompletionsRouteDeps): Route[] {
  return [generationRoute(d, { pattern: '/api/inference/v1/completions', name: 'completions' }, completionsPlan(d))];
}

/** How a completions body is answered (the route's and a batch line's one plan). */
export function completionsPlan(d: Pick<GenerationRouteDeps, 'gateway'>): (json: unknown) => GenerationAnswer {
  return (json) => {
    const request = validateCompletionsRequest(json);
    const echoes = request.prompts.map((p) => (request.echo && typeof p === 'string' ? p : ''));
    const renderer = new TextCompletionRenderer(
      request.model,
      echoes,
      request.logprobs !== undefined,
      request.includeUsage,
    );
    return {
      model: request.model,
      stream: request.stream,
      format: textCompletionFormat(renderer),
      start: startNamingFieldsAs(COMPLETIONS_FIELDS, (sink, caller, model) =>
        d.gateway.startCompletions(model, request, sink, caller),
      ),
    };
  };
}

/** The legacy completions answer format: one text_completion object, or its chunks and `data: [DONE]`. */
function textCompletionFormat(renderer: TextCompletionRenderer): AnswerFormat {
  return {
    push: (delta) => {
      renderer.push(delta);
    },
    body: () => renderer.completion(),
    streamHead: () => renderer.streamHead(),
    streamEvent: (delta) => renderer.streamEvent(delta),
    streamError: (e) => sseData(e.toBody()),
  };
}
