import { hexId } from './ids.ts';
import type { ChatDelta, TokenLogprob } from './chat-delta.ts';
import type { ResponseEcho } from './responses-request.ts';

/**
 * Renders one answer's ChatDeltas as an OpenAI Responses API object and its streaming events, in the order
 * the official SDK's `responses.stream` accumulates them:
 *
 *   response.created, response.in_progress,
 *   per message item: output_item.added, content_part.added, output_text.delta*, output_text.done,
 *                     content_part.done, output_item.done
 *   per reasoning item (reasoning-split.ts): output_item.added, content_part.added, reasoning_text.delta*,
 *                      reasoning_text.done, content_part.done, output_item.done
 *   per function call: output_item.added, function_call_arguments.delta*, function_call_arguments.done,
 *                      output_item.done
 *   response.completed (or response.incomplete when max_output_tokens cut it short)
 *
 * every event with its `sequence_number`. Pure (ids aside); one instance per response; main thread.
 */

type Json = Record<string, unknown>;
export interface ResponseEvent extends Json {
  type: string;
  sequence_number: number;
}

interface MessageItem {
  kind: 'message';
  id: string;
  text: string;
  logprobs: Json[];
}
interface ReasoningItem {
  kind: 'reasoning';
  id: string;
  text: string;
}
type Item = MessageItem | ReasoningItem | CallItem;
interface CallItem {
  kind: 'function_call';
  id: string;
  callId: string;
  name: string;
  arguments: string;
}

export interface ResponseUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number | undefined;
}

export class ResponseRenderer {
  readonly id = hexId('resp');
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private readonly items: Array<Item> = [];
  /** The output item still receiving deltas (always the last of `items`), or null. */
  private open: Item | null = null;
  /** Chat tool-call index -> output index. */
  private readonly callIndex = new Map<number, number>();
  private sequence = 0;
  private status: 'in_progress' | 'completed' | 'incomplete' = 'in_progress';
  private usage: ResponseUsage | null = null;

  constructor(
    private readonly model: string,
    private readonly echo: ResponseEcho,
    private readonly withLogprobs: boolean,
  ) {}

  /** response.created and response.in_progress. */
  start(): ResponseEvent[] {
    return [
      this.event('response.created', { response: this.response() }),
      this.event('response.in_progress', { response: this.response() }),
    ];
  }

  /** The events for one delta (a finish closes everything and completes the response). */
  push(d: ChatDelta): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    if (d.type === 'content') {
      if (d.text === '') return out;
      let item = this.open;
      if (item?.kind !== 'message') {
        this.close(out);
        item = { kind: 'message', id: hexId('msg'), text: '', logprobs: [] };
        this.openItem(item, out);
        out.push(this.partEvent('response.content_part.added', item, { part: this.textPart('', []) }));
      }
      const logprobs = this.withLogprobs ? (d.logprobs ?? []).map(wireLogprob) : [];
      item.text += d.text;
      item.logprobs.push(...logprobs);
      out.push(this.partEvent('response.output_text.delta', item, { delta: d.text, logprobs }));
    } else if (d.type === 'reasoning') {
      if (d.text === '') return out;
      let item = this.open;
      if (item?.kind !== 'reasoning') {
        this.close(out);
        item = { kind: 'reasoning', id: hexId('rs'), text: '' };
        this.openItem(item, out);
        out.push(this.partEvent('response.content_part.added', item, { part: { type: 'reasoning_text', text: '' } }));
      }
      item.text += d.text;
      out.push(this.partEvent('response.reasoning_text.delta', item, { delta: d.text }));
    } else if (d.type === 'tool_call') {
      if (d.id !== undefined) {
        this.close(out);
        const item: CallItem = {
          kind: 'function_call',
          id: hexId('fc'),
          callId: d.id,
          name: d.name ?? '',
          arguments: '',
        };
        this.openItem(item, out);
        this.callIndex.set(d.index, this.items.length - 1);
      }
      const at = this.callIndex.get(d.index);
      const item = at === undefined ? undefined : this.items[at];
      if (item?.kind === 'function_call' && d.arguments !== '') {
        item.arguments += d.arguments;
        out.push(
          this.event('response.function_call_arguments.delta', {
            item_id: item.id,
            output_index: at,
            delta: d.arguments,
          }),
        );
      }
    } else {
      this.close(out);
      this.status = d.reason === 'length' ? 'incomplete' : 'completed';
      this.usage = d.usage ?? null;
      out.push(
        this.event(this.status === 'completed' ? 'response.completed' : 'response.incomplete', {
          response: this.response(),
        }),
      );
    }
    return out;
  }

  /** The Response object as it stands (complete after the finish delta). */
  response(): Json {
    const output = this.items.map((item) => this.itemJson(item, item === this.open ? 'in_progress' : 'completed'));
    const u = this.usage;
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      status: this.status,
      background: false,
      error: null,
      incomplete_details: this.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions: this.echo.instructions,
      max_output_tokens: this.echo.max_output_tokens,
      max_tool_calls: null,
      model: this.model,
      output,
      parallel_tool_calls: this.echo.parallel_tool_calls,
      previous_response_id: this.echo.previous_response_id,
      reasoning: { effort: null, summary: null },
      service_tier: 'default',
      store: this.echo.store,
      temperature: this.echo.temperature,
      text: this.echo.text,
      tool_choice: this.echo.tool_choice,
      tools: this.echo.tools,
      top_logprobs: this.echo.top_logprobs,
      top_p: this.echo.top_p,
      truncation: 'disabled',
      usage:
        u === null
          ? null
          : {
              input_tokens: u.promptTokens,
              input_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
              output_tokens: u.completionTokens,
              output_tokens_details: { reasoning_tokens: 0 },
              total_tokens: u.promptTokens + u.completionTokens,
            },
      user: this.echo.user,
      metadata: this.echo.metadata,
    };
  }

  private event(type: string, fields: Json): ResponseEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  /** An event of the open item's one content part (index 0): item_id, output_index and content_index, then `fields`. */
  private partEvent(type: string, item: Item, fields: Json): ResponseEvent {
    return this.event(type, { item_id: item.id, output_index: this.items.length - 1, content_index: 0, ...fields });
  }

  private textPart(text: string, logprobs: Json[]): Json {
    return this.withLogprobs
      ? { type: 'output_text', text, annotations: [], logprobs }
      : { type: 'output_text', text, annotations: [] };
  }

  private itemJson(item: Item, status: 'in_progress' | 'completed'): Json {
    if (item.kind === 'reasoning') {
      const content = status === 'in_progress' && item.text === '' ? [] : [{ type: 'reasoning_text', text: item.text }];
      return { id: item.id, type: 'reasoning', summary: [], content };
    }
    if (item.kind === 'message') {
      const content = status === 'in_progress' && item.text === '' ? [] : [this.textPart(item.text, item.logprobs)];
      return { id: item.id, type: 'message', status, role: 'assistant', content };
    }
    return {
      id: item.id,
      type: 'function_call',
      status,
      call_id: item.callId,
      name: item.name,
      arguments: item.arguments,
    };
  }

  private openItem(item: Item, out: ResponseEvent[]): void {
    this.items.push(item);
    this.open = item;
    const json =
      item.kind === 'message'
        ? { id: item.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] }
        : this.itemJson(item, 'in_progress');
    out.push(this.event('response.output_item.added', { output_index: this.items.length - 1, item: json }));
  }

  private close(out: ResponseEvent[]): void {
    const item = this.open;
    if (item === null) return;
    this.open = null;
    const index = this.items.length - 1;
    if (item.kind === 'reasoning') {
      out.push(this.partEvent('response.reasoning_text.done', item, { text: item.text }));
      out.push(
        this.partEvent('response.content_part.done', item, { part: { type: 'reasoning_text', text: item.text } }),
      );
    } else if (item.kind === 'message') {
      out.push(this.partEvent('response.output_text.done', item, { text: item.text, logprobs: item.logprobs }));
      out.push(this.partEvent('response.content_part.done', item, { part: this.textPart(item.text, item.logprobs) }));
    } else {
      out.push(
        this.event('response.function_call_arguments.done', {
          item_id: item.id,
          output_index: index,
          name: item.name,
          arguments: item.arguments,
        }),
      );
    }
    out.push(this.event('response.output_item.done', { output_index: index, item: this.itemJson(item, 'completed') }));
  }
}

function wireLogprob(l: TokenLogprob): Json {
  return {
    token: l.token,
    logprob: l.logprob,
    bytes: l.bytes,
    top_logprobs: l.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  };
}
