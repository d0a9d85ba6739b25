/**
 * An incremental server-sent-events parser (the WHATWG "event stream interpretation" rules): feed it
 * decoded text in arbitrary pieces, get whole events back. Handles CRLF/CR/LF line ends (also split across
 * pieces), comment lines (`: keep-alive`), multi-line `data:` and the optional space after the colon.
 * One reader per stream; not shared.
 */
export interface SseEvent {
  /** The `event:` field; 'message' when absent. */
  event: string;
  /** The `data:` lines joined with '\n'. */
  data: string;
  /** The `id:` field, when given. */
  id: string | undefined;
}

export class SseReader {
  #buffer = '';
  #data: string[] = [];
  #event = '';
  #id: string | undefined;

  /** Feeds the next piece of text; returns the events it completed. */
  push(text: string): SseEvent[] {
    this.#buffer += text;
    const events: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const lf = this.#buffer.indexOf('\n', start);
      const cr = this.#buffer.indexOf('\r', start);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        if (cr === this.#buffer.length - 1) break; // a CR at the end may be half of a CRLF: wait for more
        end = cr;
        next = this.#buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        break;
      }
      const event = this.#line(this.#buffer.slice(start, end));
      if (event) events.push(event);
      start = next;
    }
    this.#buffer = this.#buffer.slice(start);
    return events;
  }

  /**
   * The stream ended. A CR held back as a possible half of CRLF was a line end after all; any event still
   * without its blank line is dropped, as the spec says.
   */
  end(): SseEvent[] {
    const events = this.#buffer.endsWith('\r') ? this.push('\n') : [];
    this.#buffer = '';
    this.#data = [];
    this.#event = '';
    return events;
  }

  #line(line: string): SseEvent | null {
    if (line === '') return this.#dispatch();
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
    return null;
  }

  #dispatch(): SseEvent | null {
    const event =
      this.#data.length === 0 ? null : { event: this.#event || 'message', data: this.#data.join('\n'), id: this.#id };
    this.#data = [];
    this.#event = '';
    return event;
  }
}
