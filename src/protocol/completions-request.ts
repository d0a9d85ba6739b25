import { parseRequestPriority } from './priority.ts';
import { invalidRequest, unsupportedParameter } from '../errors/index.ts';
import type { RawPrompt, SamplingOptions } from './chat-request.ts';
import { MAX_TOP_LOGPROBS, parseSamplerExtensions } from './validate-chat-features.ts';
import {
  absent,
  checkServiceTier,
  isObject,
  type Json,
  optionalBoolean,
  optionalNumber,
  parseIncludeUsage,
  parseMetadata,
  promptList,
} from './json-fields.ts';

/**
 * The legacy completions request (`POST /completions`), validated once at the edge. The prompt reaches the
 * model raw (no chat template). Every refusal is a 400 naming the field; fields that cannot be honoured
 * (`suffix`, `n` / `best_of` above 1, a non-empty `logit_bias`, `echo` with token prompts or with `logprobs`)
 * are refused, never dropped.
 */
export interface CompletionsRequest extends SamplingOptions {
  model: string;
  /** One generation per prompt; the answer's choice `index` is the prompt's position. */
  prompts: RawPrompt[];
  stream: boolean;
  /** `priority: "batch"`: run below the key's priority (protocol/priority.ts); undefined = the key's. */
  priority?: 'batch' | undefined;
  /** stream_options.include_usage */
  includeUsage: boolean;
  /** Each choice's text starts with its prompt. */
  echo: boolean;
  /** Legacy `logprobs` (0..20): each token's logprob and this many alternatives; undefined = none. */
  logprobs?: number | undefined;
  /** OpenAI's default for this API is 16 tokens. */
  maxTokens: number;
}

export const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;
/** Prompts of one request (each a generation, queued as any other). */
export const MAX_PROMPTS = 64;
const MAX_STOP = 4;

const HONOURED = new Set([
  'model',
  'prompt',
  'stream',
  'stream_options',
  'echo',
  'logprobs',
  'max_tokens',
  'stop',
  'temperature',
  'top_p',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'top_k',
  'min_p',
  'repetition_penalty',
  'priority',
]);
/** Accepted and without effect (as for chat completions). */
const HARMLESS = new Set(['user', 'metadata', 'store', 'service_tier']);
/** Refused unless given with their no-op value (checked below). */
const CHECKED = new Set(['n', 'best_of', 'suffix', 'logit_bias']);

function parseStop(raw: unknown): string[] {
  if (absent(raw)) return [];
  const list = typeof raw === 'string' ? [raw] : raw;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string'))
    throw invalidRequest("'stop' must be a string or an array of strings", 'stop', 'invalid_type');
  if (list.length > MAX_STOP)
    throw invalidRequest(`'stop' accepts at most ${MAX_STOP} sequences`, 'stop', 'invalid_value');
  if (list.some((s) => s === '')) throw invalidRequest("'stop' sequences must not be empty", 'stop', 'invalid_value');
  return list as string[];
}

function rejectUnsupported(body: Json): void {
  for (const key of Object.keys(body)) {
    if (!HONOURED.has(key) && !HARMLESS.has(key) && !CHECKED.has(key))
      throw invalidRequest(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  }
  if (!absent(body.n) && body.n !== 1)
    throw unsupportedParameter('n', 'must be 1: only one choice per prompt is supported');
  if (!absent(body.best_of) && body.best_of !== 1)
    throw unsupportedParameter('best_of', 'must be 1: only one choice per prompt is supported');
  if (!absent(body.suffix))
    throw unsupportedParameter('suffix', 'is not supported (no insertion / fill-in-the-middle)');
  if (!absent(body.logit_bias) && !(isObject(body.logit_bias) && Object.keys(body.logit_bias).length === 0))
    throw unsupportedParameter('logit_bias');
}

/** A parsed JSON body -> CompletionsRequest, or a 400 naming the field. Pure. */
export function validateCompletionsRequest(body: unknown): CompletionsRequest {
  if (!isObject(body)) throw invalidRequest('Request body must be a JSON object', null, 'invalid_type');
  rejectUnsupported(body);
  if (body.model === undefined) throw invalidRequest("'model' is required", 'model', 'missing_required_parameter');
  if (typeof body.model !== 'string' || body.model.length === 0)
    throw invalidRequest("'model' must be a non-empty string", 'model', 'invalid_type');
  const prompts = promptList(body.prompt, 'prompt', { max: MAX_PROMPTS, noun: 'prompts' });
  const stream = optionalBoolean(body, 'stream') === true;
  const includeUsage = parseIncludeUsage(body, stream);
  const echo = optionalBoolean(body, 'echo') === true;
  const logprobs = optionalNumber(body, 'logprobs', 0, MAX_TOP_LOGPROBS, true);
  if (echo && prompts.some((p) => typeof p !== 'string'))
    throw unsupportedParameter('echo', 'is not supported with token-id prompts');
  if (echo && logprobs !== undefined)
    throw unsupportedParameter('echo', 'is not supported together with logprobs (prompt tokens get no logprobs)');
  if (body.user !== undefined && body.user !== null && typeof body.user !== 'string')
    throw invalidRequest("'user' must be a string", 'user', 'invalid_type');
  optionalBoolean(body, 'store');
  parseMetadata(body.metadata);
  checkServiceTier(body.service_tier);
  return {
    ...parseSamplerExtensions(body),
    model: body.model,
    prompts,
    stream,
    includeUsage,
    echo,
    logprobs,
    maxTokens: optionalNumber(body, 'max_tokens', 1, Number.MAX_SAFE_INTEGER, true) ?? COMPLETIONS_DEFAULT_MAX_TOKENS,
    stop: parseStop(body.stop),
    temperature: optionalNumber(body, 'temperature', 0, 2),
    topP: optionalNumber(body, 'top_p', 0, 1),
    seed: optionalNumber(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true),
    presencePenalty: optionalNumber(body, 'presence_penalty', -2, 2),
    frequencyPenalty: optionalNumber(body, 'frequency_penalty', -2, 2),
    priority: parseRequestPriority(body.priority),
  };
}
