import { describe, expect, it } from 'vitest';
import {
  CHATML_TEMPLATE,
  OPEN_THINKING_CHATML_TEMPLATE,
  THINKING_CHATML_TEMPLATE,
} from '../../../models/chat-templates.ts';
import {
  type ReasoningSyntax,
  ReasoningSplitter,
  reasoningSyntaxOf,
  type SplitPiece,
} from '../../../src/protocol/reasoning-split.ts';

const THINK: ReasoningSyntax = { open: '<think>', close: '</think>', startsOpen: false, switchable: false };

/** Feeds `parts` and joins what came out per kind; `heldAfter` records what each push returned. */
function run(syntax: ReasoningSyntax, parts: string[]): { reasoning: string; content: string; pieces: SplitPiece[] } {
  const s = new ReasoningSplitter(syntax);
  const pieces = [...parts.flatMap((p) => s.push(p)), ...s.end()];
  const join = (kind: SplitPiece['kind']) =>
    pieces
      .filter((p) => p.kind === kind)
      .map((p) => p.text)
      .join('');
  return { reasoning: join('reasoning'), content: join('content'), pieces };
}

/** Every way to cut `text` in two, and the one-character-a-piece cut. */
const cuts = (text: string): string[][] => [
  ...Array.from({ length: text.length + 1 }, (_, i) => [text.slice(0, i), text.slice(i)]),
  [...text],
];

describe('reasoningSyntaxOf', () => {
  it('finds think tags, whether the generation prompt opens them, and the thinking switch', () => {
    expect(reasoningSyntaxOf(CHATML_TEMPLATE)).toBeNull();
    expect(reasoningSyntaxOf(null)).toBeNull();
    expect(reasoningSyntaxOf(THINKING_CHATML_TEMPLATE)).toEqual({
      open: '<think>',
      close: '</think>',
      startsOpen: false,
      switchable: true,
    });
    expect(reasoningSyntaxOf(OPEN_THINKING_CHATML_TEMPLATE)).toEqual({
      open: '<think>',
      close: '</think>',
      startsOpen: true,
      switchable: false,
    });
  });
});

describe('ReasoningSplitter', () => {
  it.each(cuts('<think>Plan a greeting.</think>\n\nHello there!'))(
    'splits %j into reasoning and answer, markers and the gap dropped',
    (...parts) => {
      expect(run(THINK, parts)).toMatchObject({ reasoning: 'Plan a greeting.', content: 'Hello there!' });
    },
  );

  it.each(cuts('Plan.</think>Answer <think> stays text'))(
    'starts inside the block when the prompt opened it (%j)',
    (...parts) => {
      expect(run({ ...THINK, startsOpen: true }, parts)).toMatchObject({
        reasoning: 'Plan.',
        content: 'Answer <think> stays text',
      });
    },
  );

  it.each(cuts('Hello <think>there</think>'))(
    'a reply that does not start with the marker is all answer (%j)',
    (...parts) => {
      expect(run(THINK, parts)).toMatchObject({ reasoning: '', content: 'Hello <think>there</think>' });
    },
  );

  it('answer text streams at once: nothing is held once the reply is known not to start with a marker', () => {
    const s = new ReasoningSplitter(THINK);
    expect(s.push('Hello')).toEqual([{ kind: 'content', text: 'Hello' }]);
    expect(s.push(' world')).toEqual([{ kind: 'content', text: ' world' }]);
  });

  it('holds a partial marker only as long as it may still be one', () => {
    const s = new ReasoningSplitter(THINK);
    expect(s.push('  <thi')).toEqual([]);
    expect(s.push('s is not one')).toEqual([{ kind: 'content', text: '  <this is not one' }]);
    const r = new ReasoningSplitter(THINK);
    expect(r.push('<think>a</thi')).toEqual([{ kind: 'reasoning', text: 'a' }]);
    expect(r.push('nk>b')).toEqual([{ kind: 'content', text: 'b' }]);
  });

  it('a reply cut inside its thinking ends as reasoning, a partial marker included', () => {
    expect(run(THINK, ['<think>still thinking </thi'])).toMatchObject({
      reasoning: 'still thinking </thi',
      content: '',
    });
    expect(run(THINK, ['<th'])).toMatchObject({ reasoning: '', content: '<th' });
  });
});
