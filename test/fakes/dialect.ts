import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderName } from '../../src/providers/chat-provider.ts';

/**
 * What a fake vendor is made of: the vendor-neutral reply a test scripts, and the VendorDialect that renders it
 * in one vendor's wire format and reads that vendor's requests back. FakeUpstream (fake-upstream.ts) runs one.
 */

/** A function call the fake's answer makes; the dialect renders it in the vendor's own shape. */
export interface FakeToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** How a stream splits the arguments' JSON text, for vendors that stream it in fragments (OpenAI, Anthropic). Defaults to 3 parts. */
  pieces?: string[] | undefined;
}

/** What a successful answer says. Vendor-neutral; the dialect renders it. */
export interface FakeReply {
  /** Defaults to a fixed sentence, or '' when the answer makes tool calls. */
  text: string;
  /** Function calls after the text (finish reason defaults to the dialect's tool finish). */
  toolCalls?: FakeToolCall[] | undefined;
  /** How a stream splits `text`. Defaults to words with their trailing spaces. */
  pieces?: string[] | undefined;
  /** The vendor's own finish reason (e.g. 'max_tokens' for Anthropic). Defaults to the dialect's "stop". */
  finishReason?: string | undefined;
  /** Defaults to prompt = words in the request's messages, completion = number of pieces. */
  usage?: { prompt: number; completion: number } | undefined;
}

export interface VendorResponse {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** A request in vendor-neutral terms, as read back from the vendor's wire format (for assertions). */
export interface NormalizedMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  /** assistant: the calls it made (arguments parsed; Gemini: the part's thoughtSignature). */
  toolCalls?:
    Array<{ id?: string | undefined; name: string; arguments: unknown; signature?: string | undefined }> | undefined;
  /** tool: the id of the call answered (OpenAI, Mistral, Anthropic) ... */
  toolCallId?: string | undefined;
  /** ... or the function's name (Gemini). */
  toolName?: string | undefined;
}

export interface NormalizedRequest {
  model: string;
  stream: boolean;
  system: string | undefined;
  messages: NormalizedMessage[];
  tools?: Array<{ name: string; description?: string | undefined; parameters: unknown }> | undefined;
  toolChoice?: 'auto' | 'required' | 'none' | { name: string } | undefined;
  /** false when the vendor was told to make at most one call. */
  parallelToolCalls?: boolean | undefined;
  responseFormat?: { type: 'json_object' } | { type: 'json_schema'; schema: unknown } | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  maxTokens?: number | undefined;
  stop?: string[] | undefined;
  seed?: number | undefined;
}

/** A stream rendered as SSE text: everything before the pieces, one string per piece, everything after. */
export interface RenderedStream {
  head: string[];
  pieces: string[];
  tail: string[];
}

/** Everything vendor-specific: routes, auth, error bodies, reply bodies, SSE framing. */
export interface VendorDialect {
  readonly name: ProviderName;
  /** Path prefix that a provider's baseUrl includes (OpenAI/Mistral '/v1', others ''). */
  readonly basePath: string;
  /** Whether the request targets the chat endpoint; null when it does not (-> 404). */
  route(method: string, url: URL, body: unknown): { stream: boolean; model: string } | null;
  /** The API key the client sent, if any. */
  apiKeyOf(headers: IncomingHttpHeaders, url: URL): string | undefined;
  /** The vendor's answer to a missing or wrong key. */
  unauthorized(sentKey: string | undefined): VendorResponse;
  /** The vendor's own request validation (required headers, fields, ranges); null when the request is acceptable. */
  validate(headers: IncomingHttpHeaders, body: unknown, url: URL): VendorResponse | null;
  /** The vendor's error response for `status`. */
  error(status: number, message: string | undefined, retryAfter: string | undefined): VendorResponse;
  json(reply: ResolvedReply, model: string): unknown;
  stream(reply: ResolvedReply, model: string, body: unknown): RenderedStream;
  /** The vendor's in-stream error event. */
  streamError(message: string): string;
  /** Response headers of a stream. */
  readonly streamHeaders: Record<string, string>;
  /** The stop reason the dialect uses by default. */
  readonly stopReason: string;
  /** The stop reason of an answer that makes tool calls. */
  readonly toolStopReason: string;
  describe(body: unknown, url: URL): NormalizedRequest;
}

/** A reply with every default applied. */
export type ResolvedReply = Required<Omit<FakeReply, 'pieces' | 'toolCalls'>> & {
  pieces: string[];
  toolCalls: Array<Required<FakeToolCall>>;
};
