import { invalidRequest } from '../errors/index.ts';
import type { ProjectGateway } from './project-gateway.ts';
import { validateChatRequest } from '../protocol/validate-chat-request.ts';
import { respondFromDeltas } from '../inference/chat-responder.ts';
import { bearerToken, type Route } from '../http/router.ts';

export interface ProjectInferenceRouteDeps {
  projects: ProjectGateway;
  bodyLimit: number;
  keepAliveMs: number;
  streamBufferLimit: number;
}

/**
 * The per-project endpoint: POST /api/v1/inference/{projectId}/chat/completions with the project's bearer
 * token. Token, project state and provider configuration are checked before the body is awaited (401,
 * 503, 500 in that order; see ProjectGateway), then the body is validated like the shared endpoint's (400).
 * `model` is required by the request shape, but the project's stored model is what the upstream gets.
 */
export function projectInferenceRoutes(d: ProjectInferenceRouteDeps): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/api/v1/inference/:projectId/chat/completions',
      name: 'project_chat_completions',
      body: { kind: 'json', limit: d.bodyLimit },
      handler: async (ex) => {
        const session = await d.projects.open(ex.params[0]!, bearerToken(ex.authorization));
        const json = await ex.json();
        if (json === undefined) throw invalidRequest('Request body is required', null, 'missing_body');
        const request = validateChatRequest(json);
        await respondFromDeltas(
          ex,
          {
            stream: request.stream,
            includeUsage: request.includeUsage,
            model: session.model,
            keepAliveMs: d.keepAliveMs,
            streamBufferLimit: d.streamBufferLimit,
          },
          (signal) => session.chat(request, signal),
        );
      },
    },
  ];
}
