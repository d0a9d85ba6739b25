/**
 * Incremental server-sent-events parser (WHATWG HTML "event stream interpretation"), enough for the
 * four vendors: `event:` and `data:` fields, multi-line data joined with '\n', comments, and all three
 * line endings (`\n`, `\r\n`, `\r` — Gemini frames with `\r\n\r\n`), including a `\r\n` split across
 * two network chunks. UTF-8 sequences split across chunks are decoded correctly. Pure; one per stream.
 */
export interface SseEvent {
  /** The `event:` field, or 'message' when absent. */
  event: string;
  data: string;
}

export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private skipLeadingLf = false;
  private eventType = '';
  private dataLines: string[] = [];
  private pendingBytes = 0;
  private first = true;

  /** @param maxEventChars cap on one event's accumulated data (a runaway event is an upstream fault). */
  constructor(private readonly maxEventChars = 8 * 1024 * 1024) {}

  /** Feeds bytes (or text); returns the events completed by them. Throws RangeError past maxEventChars. */
  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      this.first = false;
    }
    return this.consume(text);
  }

  /** End of input: flushes the decoder. Per the SSE spec an event without its blank line is discarded. */
  end(): SseEvent[] {
    const events = this.consume(this.decoder.decode());
    this.buffer = '';
    this.dataLines = [];
    this.eventType = '';
    return events;
  }

  private consume(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    let input = text;
    if (this.skipLeadingLf && input.length > 0) {
      if (input[0] === '\n') input = input.slice(1);
      this.skipLeadingLf = false;
    }
    this.buffer += input;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      const line = this.buffer.slice(start, i);
      if (ch === 13) {
        if (i + 1 < this.buffer.length) {
          if (this.buffer.charCodeAt(i + 1) === 10) i++;
        } else {
          this.skipLeadingLf = true; // a '\n' may follow in the next chunk
        }
      }
      start = i + 1;
      const event = this.line(line);
      if (event !== null) events.push(event);
    }
    this.buffer = this.buffer.slice(start);
    this.pendingBytes = this.buffer.length + this.dataLines.reduce((n, l) => n + l.length, 0);
    if (this.pendingBytes > this.maxEventChars)
      throw new RangeError(`server-sent event exceeds ${this.maxEventChars} characters`);
    return events;
  }

  private line(line: string): SseEvent | null {
    if (line === '') {
      if (this.dataLines.length === 0) {
        this.eventType = '';
        return null;
      }
      const event = { event: this.eventType || 'message', data: this.dataLines.join('\n') };
      this.dataLines = [];
      this.eventType = '';
      return event;
    }
    if (line.charCodeAt(0) === 58) return null; // ':' comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventType = value;
    return null;
  }
}
