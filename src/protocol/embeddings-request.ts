import { invalidRequest, unsupportedParameter } from '../errors/index.ts';
import type { RawPrompt } from './chat-request.ts';
import { absent, isObject, type Json, promptList } from './json-fields.ts';

/**
 * The embeddings request (`POST /embeddings`, OpenAI's shape), validated once at the edge. Every refusal is a
 * 400 naming the field: `input` that is empty or holds an empty string or token array (`input[i]`), more than
 * MAX_EMBEDDING_INPUTS inputs, an unknown `encoding_format`, and `dimensions` (the served models' vectors have
 * one fixed size: it is refused, never ignored). Each input's length against the context is the engine's check.
 */
export interface EmbeddingsRequest {
  model: string;
  /** One vector per input, in order: text (tokenized without a chat template) or token ids taken as they are. */
  inputs: RawPrompt[];
  /** `input` was one input (a string or a token-id array), not a list of them: a refusal of input[0] names `input`. */
  single: boolean;
  /** `float`: arrays of numbers; `base64`: the little-endian float32 bytes of each vector, base64-encoded (as OpenAI). */
  encodingFormat: 'float' | 'base64';
}

/** OpenAI's own bound on the inputs of one request. */
export const MAX_EMBEDDING_INPUTS = 2048;

const ACCEPTED = new Set(['model', 'input', 'encoding_format', 'dimensions', 'user']);

/** An input string: an empty one has nothing to embed and is refused. */
function nonEmptyText(s: string, param: string): string {
  if (s === '') throw invalidRequest(`'${param}' must not be an empty string`, param, 'invalid_value');
  return s;
}

/** A parsed JSON body -> EmbeddingsRequest, or a 400 naming the field. Pure. */
export function validateEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (!isObject(body)) throw invalidRequest('Request body must be a JSON object', null, 'invalid_type');
  for (const key of Object.keys(body)) {
    if (!ACCEPTED.has(key))
      throw invalidRequest(`Unrecognized request argument supplied: ${key}`, key, 'unknown_parameter');
  }
  if (body.model === undefined) throw invalidRequest("'model' is required", 'model', 'missing_required_parameter');
  if (typeof body.model !== 'string' || body.model.length === 0)
    throw invalidRequest("'model' must be a non-empty string", 'model', 'invalid_type');
  const inputs = promptList(body.input, 'input', { max: MAX_EMBEDDING_INPUTS, noun: 'inputs' }, nonEmptyText);
  const format = body.encoding_format;
  if (!absent(format) && format !== 'float' && format !== 'base64')
    throw invalidRequest("'encoding_format' must be 'float' or 'base64'", 'encoding_format', 'invalid_value');
  if (!absent(body.dimensions))
    throw unsupportedParameter('dimensions', "is not supported: this model's embeddings have one fixed size");
  if (!absent(body.user) && typeof body.user !== 'string')
    throw invalidRequest("'user' must be a string", 'user', 'invalid_type');
  const single = typeof body.input === 'string' || (Array.isArray(body.input) && typeof body.input[0] === 'number');
  return { model: body.model, inputs, single, encodingFormat: format === 'base64' ? 'base64' : 'float' };
}
