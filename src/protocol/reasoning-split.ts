/**
 * Reasoning kept apart from the answer (contract "Reasoning models"): the text a model's chat template marks as
 * thinking — `<think>…</think>`, as DeepSeek-R1, Qwen3, QwQ and their kin write it — is returned as reasoning
 * (`reasoning_content`, a `reasoning` output item, a `thinking` block), the rest as the answer. Pure.
 */

/** How a model's template marks thinking. */
export interface ReasoningSyntax {
  open: string;
  close: string;
  /** The generation prompt itself opens the thinking block: the reply starts inside it (DeepSeek-R1's template). */
  startsOpen: boolean;
  /** The template has a switch for thinking (`enable_thinking`, Qwen3's), so `reasoning_effort` can set it. */
  switchable: boolean;
}

const THINK = { open: '<think>', close: '</think>' };

/**
 * The reasoning syntax of a Jinja chat template, or null when it marks none. The generation prompt opens the
 * block when, after `add_generation_prompt`, the template writes `<think>` that is not closed right away (Qwen3
 * writes `<think>\n\n</think>` there only to switch thinking off).
 */
export function reasoningSyntaxOf(template: string | null): ReasoningSyntax | null {
  if (template === null || !template.includes(THINK.open) || !template.includes(THINK.close)) return null;
  const generation = template.slice(Math.max(0, template.lastIndexOf('add_generation_prompt')));
  const at = generation.indexOf(THINK.open);
  const startsOpen = at >= 0 && !generation.slice(at, at + THINK.open.length + 16).includes(THINK.close);
  return { ...THINK, startsOpen, switchable: template.includes('enable_thinking') };
}

/**
 * What switches a switchable template's thinking off, written after the generation prompt: an empty thinking
 * block, as Qwen3's template writes it for `enable_thinking: false`.
 */
export function thinkingOffText(syntax: ReasoningSyntax): string {
  return `${syntax.open}\n\n${syntax.close}\n\n`;
}

/** One piece of a split reply. */
export interface SplitPiece {
  kind: 'reasoning' | 'content';
  text: string;
}

/**
 * Splits a reply, streamed in pieces of any size, into reasoning and content. A reply that starts (after
 * whitespace) with the open marker, or any reply when the prompt opened the block, is reasoning until the close
 * marker; the whitespace after it is dropped; everything after is content. A marker split across pieces is held
 * back until it is whole (or proves not to be one), so no marker text ever leaks into either side.
 */
export class ReasoningSplitter {
  private state: 'start' | 'reasoning' | 'content' | 'after-close';
  private held = '';

  constructor(private readonly syntax: ReasoningSyntax) {
    this.state = syntax.startsOpen ? 'reasoning' : 'start';
  }

  push(text: string): SplitPiece[] {
    const out: SplitPiece[] = [];
    let rest = this.held + text;
    this.held = '';
    while (rest !== '') {
      if (this.state === 'start') {
        const lead = rest.trimStart();
        if (lead.startsWith(this.syntax.open)) {
          this.state = 'reasoning';
          rest = lead.slice(this.syntax.open.length);
        } else if (this.syntax.open.startsWith(lead)) {
          this.held = rest; // whitespace or a partial marker: not decided yet
          return out;
        } else {
          this.state = 'content';
        }
      } else if (this.state === 'reasoning') {
        const at = rest.indexOf(this.syntax.close);
        if (at >= 0) {
          emit(out, 'reasoning', rest.slice(0, at));
          this.state = 'after-close';
          rest = rest.slice(at + this.syntax.close.length);
        } else {
          const keep = partialSuffix(rest, this.syntax.close);
          emit(out, 'reasoning', rest.slice(0, rest.length - keep));
          this.held = rest.slice(rest.length - keep);
          return out;
        }
      } else if (this.state === 'after-close') {
        rest = rest.trimStart();
        if (rest !== '') this.state = 'content';
      } else {
        emit(out, 'content', rest);
        rest = '';
      }
    }
    return out;
  }

  /** What is still held when the reply ends (a partial marker is text after all). */
  end(): SplitPiece[] {
    const held = this.held;
    this.held = '';
    if (held === '') return [];
    return [{ kind: this.state === 'reasoning' ? 'reasoning' : 'content', text: held }];
  }
}

function emit(out: SplitPiece[], kind: SplitPiece['kind'], text: string): void {
  if (text !== '') out.push({ kind, text });
}

/** The length of the longest end of `text` that is a proper start of `marker`. */
function partialSuffix(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--)
    if (marker.startsWith(text.slice(text.length - n))) return n;
  return 0;
}
