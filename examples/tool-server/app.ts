/**
 * The example tool server: the built-in `healthcheck` plus `complete`, which asks Hearth's shared model
 * for a completion (streaming, with retries and time-outs; see hearth-client.ts). Built from a plain config
 * so tests and server.ts can both make one.
 */
import { createToolServer, defineTool, ToolError, type ToolServer } from 'hearth/tools';
import { HearthClient, HearthError, type ChatMessage, type HearthClientOptions } from './hearth-client.ts';

export interface ExampleConfig {
  /** Defaults to the kit's default (PORT, else 8080). */
  port?: number;
  host?: string;
  /** The key this tool server's own clients must send (TOOL_SERVER_API_KEY). */
  toolServerApiKey: string;
  hearth: HearthClientOptions;
  /** Used when a call names no model (HEARTH_MODEL). */
  defaultModel?: string;
}

interface CompleteArgs {
  prompt: string;
  system?: string;
  model?: string;
  temperature?: number;
  max_tokens?: number;
}

/** Turns a Hearth failure into what this tool's caller should see. */
export function toToolError(err: HearthError): ToolError {
  if (err.kind === 'timeout') return new ToolError(504, err.message, { code: 'hearth_timeout' });
  if (err.kind === 'http' && err.status !== null) {
    if (err.status === 401 || err.status === 403) {
      return new ToolError(502, "Hearth rejected this tool server's API key (check HEARTH_API_KEY)", {
        code: 'hearth_auth_failed',
      });
    }
    if (err.status === 429 || err.status === 503) {
      return new ToolError(503, err.message, {
        code: err.code ?? 'hearth_unavailable',
        ...(err.retryAfterSeconds !== undefined ? { retryAfter: err.retryAfterSeconds } : {}),
      });
    }
    // A request Hearth refuses (unknown model, prompt too long, bad temperature) is the caller's to fix.
    if (err.status < 500) return new ToolError(400, err.message, { code: err.code ?? 'hearth_rejected' });
  }
  return new ToolError(502, err.message, { code: 'hearth_failed' });
}

export function createExampleToolServer(config: ExampleConfig): ToolServer {
  const hearth = new HearthClient(config.hearth);
  // The kit's per-call limit sits above the client's own deadline, so a slow Hearth is reported as
  // Hearth's time-out (504 hearth_timeout) rather than the kit's generic one.
  const toolTimeoutMs = (config.hearth.timeoutMs ?? 120_000) + 5_000;

  const complete = defineTool<CompleteArgs>({
    name: 'complete',
    description: "Completes a prompt with Hearth's shared model and returns the generated text.",
    input_schema: {
      type: 'object',
      properties: {
        prompt: { type: 'string', minLength: 1, description: 'The user message.' },
        system: { type: 'string', description: 'An optional system message.' },
        model: {
          type: 'string',
          minLength: 1,
          description: 'A Hearth model id (<namespace>/<model_name>); defaults to HEARTH_MODEL.',
        },
        temperature: { type: 'number', minimum: 0, maximum: 2 },
        max_tokens: { type: 'integer', minimum: 1, maximum: 4096 },
      },
      required: ['prompt'],
      additionalProperties: false,
    },
    async handler(args, ctx) {
      const model = args.model ?? config.defaultModel;
      if (!model) throw new ToolError(400, 'No model: pass args.model or set HEARTH_MODEL', { code: 'model_required' });
      const messages: ChatMessage[] = [];
      if (args.system) messages.push({ role: 'system', content: args.system });
      messages.push({ role: 'user', content: args.prompt });
      try {
        const result = await hearth.complete(
          {
            model,
            messages,
            ...(args.temperature !== undefined ? { temperature: args.temperature } : {}),
            ...(args.max_tokens !== undefined ? { max_tokens: args.max_tokens } : {}),
          },
          { signal: ctx.signal },
        );
        return {
          content: result.content,
          model: result.model,
          finish_reason: result.finish_reason,
          usage: result.usage ? { ...result.usage } : null,
        };
      } catch (err) {
        if (err instanceof HearthError) throw toToolError(err);
        throw err;
      }
    },
  });

  return createToolServer({
    apiKey: config.toolServerApiKey,
    tools: [complete],
    toolTimeoutMs,
    name: 'hearth-example-tool-server',
    ...(config.port !== undefined ? { port: config.port } : {}),
    ...(config.host !== undefined ? { host: config.host } : {}),
  });
}
