import type { NormalizedMessage, NormalizedRequest, ResolvedReply, VendorDialect, VendorResponse } from './dialect.ts';
import { fakeId, isObj, num } from './vendor-json.ts';

/**
 * Gemini API (ai.google.dev/api/generate-content): POST /v1beta/models/{model}:generateContent and
 * :streamGenerateContent; key in `x-goog-api-key` (or `?key=`). With `alt=sse` the stream is SSE with
 * `data: <GenerateContentResponse>` events separated by `\r\n\r\n` (the framing Google's JS SDK parses)
 * and no end marker: the last chunk carries finishReason and the full usageMetadata. (Without `alt=sse`
 * real Gemini streams one JSON array; this fake answers that with a 400, as Hearth never asks for it.) Errors are google.rpc.Status:
 * `{"error":{"code","message","status","details"}}`; a wrong key is 400 INVALID_ARGUMENT with an ErrorInfo
 * reason API_KEY_INVALID, a missing key 403 PERMISSION_DENIED; 429 RESOURCE_EXHAUSTED carries its retry
 * hint as google.rpc.RetryInfo.retryDelay in the body (so a scripted retryAfter goes there, not in a header).
 * Roles must be user | model.
 * Function calling (ai.google.dev/gemini-api/docs/function-calling, api/caching#Tool): `tools`
 * [{functionDeclarations: [{name, description, parameters: Schema}]}], `toolConfig.functionCallingConfig`
 * {mode: AUTO|ANY|NONE, allowedFunctionNames (ANY only)}; calls come back whole as `functionCall` {name, args}
 * parts (finishReason STOP), results go in as `functionResponse` {name, response: object} parts. Structured
 * output: generationConfig.responseMimeType "application/json" (+ responseSchema). `Schema` is an OpenAPI
 * subset: an unknown field such as additionalProperties is a 400 "Unknown name", as the real API answers.
 */
const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const googleError = (code: number, message: string, details?: unknown[]): VendorResponse => ({
  status: code,
  body: {
    error: {
      code,
      message,
      status: STATUS_NAMES[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION'),
      ...(details ? { details } : {}),
    },
  },
});

const ROUTE = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/** The fields of Gemini's `Schema` (ai.google.dev/api/caching#Schema), by the kind of value they constrain. */
const SCHEMA_FIELDS_BY_KIND = {
  any: ['type', 'format', 'title', 'description', 'nullable', 'enum', 'example', 'default', 'anyOf'],
  object: ['properties', 'required', 'minProperties', 'maxProperties', 'propertyOrdering'],
  array: ['items', 'minItems', 'maxItems'],
  string: ['minLength', 'maxLength', 'pattern'],
  number: ['minimum', 'maximum'],
};
const SCHEMA_FIELDS = new Set(Object.values(SCHEMA_FIELDS_BY_KIND).flat());
const SCHEMA_TYPES = new Set(['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL']);

/** The first problem of a Schema, as the real API words it, or null. */
function schemaProblem(schema: unknown, at: string): string | null {
  if (!isObj(schema)) return `Invalid value at '${at}': expected an object`;
  for (const key of Object.keys(schema)) {
    if (!SCHEMA_FIELDS.has(key))
      return `Invalid JSON payload received. Unknown name "${key}" at '${at}': Cannot find field.`;
  }
  if (schema.type !== undefined && !SCHEMA_TYPES.has(String(schema.type).toUpperCase()))
    return `Invalid value at '${at}.type': "${String(schema.type)}"`;
  if (isObj(schema.properties)) {
    for (const [k, v] of Object.entries(schema.properties)) {
      const p = schemaProblem(v, `${at}.properties[${k}].value`);
      if (p) return p;
    }
  }
  if (schema.items !== undefined) return schemaProblem(schema.items, `${at}.items`);
  if (Array.isArray(schema.anyOf)) {
    for (const [i, v] of schema.anyOf.entries()) {
      const p = schemaProblem(v, `${at}.any_of[${i}]`);
      if (p) return p;
    }
  }
  return null;
}

/** The function-calling and structured-output rules of generateContent, as an error message or null. */
function toolProblem(b: Record<string, unknown>): string | null {
  const names = new Set<string>();
  if (b.tools !== undefined) {
    if (!Array.isArray(b.tools)) return "Invalid value at 'tools': expected a list";
    for (const [i, tool] of b.tools.entries()) {
      const decls = isObj(tool) && Array.isArray(tool.functionDeclarations) ? tool.functionDeclarations : [];
      for (const [j, d] of decls.entries()) {
        if (!isObj(d) || typeof d.name !== 'string' || !/^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$/.test(d.name))
          return `* GenerateContentRequest.tools[${i}].function_declarations[${j}].name: Invalid function name.`;
        names.add(d.name);
        if (d.parameters !== undefined) {
          const p = schemaProblem(d.parameters, `tools[${i}].function_declarations[${j}].parameters`);
          if (p) return p;
        }
      }
    }
  }
  if (b.toolConfig !== undefined) {
    const fcc =
      isObj(b.toolConfig) && isObj(b.toolConfig.functionCallingConfig) ? b.toolConfig.functionCallingConfig : {};
    if (!['AUTO', 'ANY', 'NONE', 'VALIDATED', 'MODE_UNSPECIFIED'].includes(String(fcc.mode)))
      return `Invalid value at 'tool_config.function_calling_config.mode' (${String(fcc.mode)})`;
    if (fcc.allowedFunctionNames !== undefined) {
      if (fcc.mode !== 'ANY' && fcc.mode !== 'VALIDATED')
        return '* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: only allowed when mode is ANY.';
      for (const n of Array.isArray(fcc.allowedFunctionNames) ? fcc.allowedFunctionNames : []) {
        if (!names.has(String(n)))
          return `* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: function ${String(n)} is not declared.`;
      }
    }
  }
  for (const [i, c] of (Array.isArray(b.contents) ? b.contents : []).entries()) {
    for (const [j, part] of (isObj(c) && Array.isArray(c.parts) ? c.parts : []).entries()) {
      if (!isObj(part)) continue;
      if (
        part.functionCall !== undefined &&
        !(
          isObj(part.functionCall) &&
          typeof part.functionCall.name === 'string' &&
          (part.functionCall.args === undefined || isObj(part.functionCall.args))
        )
      ) {
        return `Invalid value at 'contents[${i}].parts[${j}].function_call'`;
      }
      if (
        part.functionResponse !== undefined &&
        !(
          isObj(part.functionResponse) &&
          typeof part.functionResponse.name === 'string' &&
          isObj(part.functionResponse.response)
        )
      ) {
        return `Invalid value at 'contents[${i}].parts[${j}].function_response'`;
      }
    }
  }
  const config = isObj(b.generationConfig) ? b.generationConfig : {};
  if (config.responseSchema !== undefined) {
    if (config.responseMimeType !== 'application/json')
      return '* GenerateContentRequest.generation_config.response_schema: only supported with response_mime_type application/json.';
    return schemaProblem(config.responseSchema, 'generation_config.response_schema');
  }
  return null;
}

function describeContent(c: Record<string, unknown>, partsText: (v: unknown) => string): NormalizedMessage[] {
  const parts = Array.isArray(c.parts) ? c.parts.filter(isObj) : [];
  const text = partsText(c);
  if (c.role === 'model') {
    const calls = parts
      .filter((p) => isObj(p.functionCall))
      .map((p) => {
        const fc = p.functionCall as Record<string, unknown>;
        return {
          name: String(fc.name),
          arguments: fc.args ?? {},
          ...(typeof p.thoughtSignature === 'string' ? { signature: p.thoughtSignature } : {}),
        };
      });
    return [{ role: 'assistant', content: text, ...(calls.length > 0 ? { toolCalls: calls } : {}) }];
  }
  const results: NormalizedMessage[] = parts
    .filter((p) => isObj(p.functionResponse))
    .map((p) => {
      const fr = p.functionResponse as Record<string, unknown>;
      return { role: 'tool', content: JSON.stringify(fr.response), toolName: String(fr.name) };
    });
  return text === '' && results.length > 0 ? results : [...results, { role: 'user', content: text }];
}

/** Like Gemini 3, the first functionCall part of an answer carries a thoughtSignature (parallel calls: only the first). */
const functionCallParts = (reply: ResolvedReply) =>
  reply.toolCalls.map((c, i) => ({
    functionCall: { name: c.name, args: c.arguments },
    ...(i === 0 ? { thoughtSignature: `c2lnbmF0dXJl+/${fakeId(16)}==` } : {}),
  }));

/** Gemini 3 models reject a history whose model turn has calls but no thoughtSignature on the first one (2.x models do not check). */
function signatureProblem(model: string, contents: unknown[]): string | null {
  if (!model.startsWith('gemini-3')) return null;
  for (const [i, c] of contents.entries()) {
    const calls =
      isObj(c) && c.role === 'model' && Array.isArray(c.parts)
        ? c.parts.filter((p) => isObj(p) && isObj(p.functionCall))
        : [];
    if (calls.length > 0 && !(isObj(calls[0]) && typeof calls[0].thoughtSignature === 'string')) {
      return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${String((calls[0] as { functionCall: { name?: unknown } }).functionCall.name)}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
    }
  }
  return null;
}

function usageMetadata(prompt: number, completion: number | undefined): Record<string, unknown> {
  return {
    promptTokenCount: prompt,
    ...(completion !== undefined ? { candidatesTokenCount: completion } : {}),
    totalTokenCount: prompt + (completion ?? 0),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
}

function describeChoice(toolConfig: unknown): NormalizedRequest['toolChoice'] {
  const fcc =
    isObj(toolConfig) && isObj(toolConfig.functionCallingConfig) ? toolConfig.functionCallingConfig : undefined;
  if (fcc === undefined) return undefined;
  if (fcc.mode === 'NONE') return 'none';
  if (fcc.mode === 'AUTO') return 'auto';
  const allowed = Array.isArray(fcc.allowedFunctionNames) ? fcc.allowedFunctionNames : [];
  return allowed.length === 1 ? { name: String(allowed[0]) } : 'required';
}

export const geminiDialect: VendorDialect = {
  name: 'gemini',
  basePath: '',
  stopReason: 'STOP',
  toolStopReason: 'STOP',
  streamHeaders: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  route(method, url) {
    const match = ROUTE.exec(url.pathname);
    if (method !== 'POST' || match === null) return null;
    return { stream: match[2] === 'streamGenerateContent', model: decodeURIComponent(match[1] ?? '') };
  },
  apiKeyOf: (headers, url) =>
    typeof headers['x-goog-api-key'] === 'string'
      ? headers['x-goog-api-key']
      : (url.searchParams.get('key') ?? undefined),
  unauthorized: (key) =>
    key === undefined
      ? googleError(
          403,
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        )
      : googleError(400, 'API key not valid. Please pass a valid API key.', [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'API_KEY_INVALID',
            domain: 'googleapis.com',
            metadata: { service: 'generativelanguage.googleapis.com' },
          },
          {
            '@type': 'type.googleapis.com/google.rpc.LocalizedMessage',
            locale: 'en-US',
            message: 'API key not valid. Please pass a valid API key.',
          },
        ]),
  validate(_headers, body, url) {
    if (ROUTE.exec(url.pathname)?.[2] === 'streamGenerateContent' && url.searchParams.get('alt') !== 'sse') {
      // Real Gemini would answer a streamed JSON array here; this fake implements only the SSE variant.
      return googleError(400, 'fake gemini: only streamGenerateContent?alt=sse is implemented');
    }
    if (!isObj(body)) return googleError(400, 'Invalid JSON payload received.');
    if (!Array.isArray(body.contents) || body.contents.length === 0)
      return googleError(400, '* GenerateContentRequest.contents: contents is not specified');
    for (const c of body.contents) {
      if (!isObj(c) || (c.role !== undefined && c.role !== 'user' && c.role !== 'model'))
        return googleError(400, 'Please use a valid role: user, model.');
    }
    const problem =
      toolProblem(body) ?? signatureProblem(decodeURIComponent(ROUTE.exec(url.pathname)?.[1] ?? ''), body.contents);
    return problem === null ? null : googleError(400, problem);
  },
  error(status, message, retryAfter) {
    if (status === 429) {
      const details =
        retryAfter !== undefined
          ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfter}s` }]
          : undefined;
      return googleError(
        429,
        message ?? 'You exceeded your current quota, please check your plan and billing details.',
        details,
      );
    }
    if (status === 503) return googleError(503, message ?? 'The model is overloaded. Please try again later.');
    if (status >= 500)
      return googleError(
        status,
        message ??
          'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
      );
    if (status === 404)
      return googleError(
        404,
        message ?? 'models/gemini-nope is not found for API version v1beta, or is not supported for generateContent.',
      );
    return googleError(status, message ?? 'Request contains an invalid argument.');
  },
  json(reply, model) {
    return {
      candidates: [
        {
          content: {
            parts: [
              ...(reply.text !== '' || reply.toolCalls.length === 0 ? [{ text: reply.text }] : []),
              ...functionCallParts(reply),
            ],
            role: 'model',
          },
          finishReason: reply.finishReason,
          index: 0,
        },
      ],
      usageMetadata: usageMetadata(reply.usage.prompt, reply.usage.completion),
      modelVersion: model,
      responseId: fakeId(),
    };
  },
  stream(reply, model, _body) {
    const responseId = fakeId();
    // Text pieces, then (Gemini sends calls whole) one frame with every functionCall part; the last frame carries the finish.
    const parts: unknown[][] = reply.pieces.map((text) => [{ text }]);
    if (reply.toolCalls.length > 0) parts.push(functionCallParts(reply));
    if (parts.length === 0) parts.push([{ text: '' }]);
    const frames = parts.map((frameParts, i) => {
      const last = i === parts.length - 1;
      return {
        candidates: [
          {
            content: { parts: frameParts, role: 'model' },
            ...(last ? { finishReason: reply.finishReason } : {}),
            index: 0,
          },
        ],
        usageMetadata: usageMetadata(reply.usage.prompt, last ? reply.usage.completion : undefined),
        modelVersion: model,
        responseId,
      };
    });
    return { head: [], pieces: frames.map((f) => `data: ${JSON.stringify(f)}\r\n\r\n`), tail: [] };
  },
  streamError: (message) => `data: ${JSON.stringify({ error: { code: 500, message, status: 'INTERNAL' } })}\r\n\r\n`,
  describe(body, url): NormalizedRequest {
    const b = isObj(body) ? body : {};
    const contents = Array.isArray(b.contents) ? b.contents.filter(isObj) : [];
    const partsText = (v: unknown) =>
      isObj(v) && Array.isArray(v.parts)
        ? v.parts.map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('')
        : '';
    const config = isObj(b.generationConfig) ? b.generationConfig : {};
    const match = ROUTE.exec(url.pathname);
    return {
      model: decodeURIComponent(match?.[1] ?? ''),
      stream: match?.[2] === 'streamGenerateContent',
      system: b.systemInstruction === undefined ? undefined : partsText(b.systemInstruction),
      messages: contents.flatMap((c) => describeContent(c, partsText)),
      temperature: num(config.temperature),
      topP: num(config.topP),
      maxTokens: num(config.maxOutputTokens),
      stop: Array.isArray(config.stopSequences) ? config.stopSequences.map(String) : undefined,
      seed: num(config.seed),
      tools: Array.isArray(b.tools)
        ? b.tools
            .filter(isObj)
            .flatMap((t) => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations.filter(isObj) : []))
            .map((d) => ({
              name: String(d.name),
              description: typeof d.description === 'string' ? d.description : undefined,
              parameters: d.parameters,
            }))
        : undefined,
      toolChoice: describeChoice(b.toolConfig),
      parallelToolCalls: undefined,
      responseFormat:
        config.responseMimeType === 'application/json'
          ? config.responseSchema !== undefined
            ? { type: 'json_schema', schema: config.responseSchema }
            : { type: 'json_object' }
          : undefined,
    };
  },
};
