/**
 * A random walker over GBNF grammars (the subset Hearth's converters write: literals, character classes,
 * rule references, groups, `|`, `?`, `*`, `+`, `{m,n}`; also `.`, any character, which llama.cpp's own converter
 * writes for a pattern's `.`): it produces strings the grammar admits, standing in
 * for a model whose every sampled token is constrained by the grammar. Seeded, so tests are reproducible.
 * Past `maxDepth` it takes the cheapest way out, so recursive grammars terminate.
 */
import { SeededRandom } from '../../models/seeded-random.ts';

type Node =
  | { k: 'lit'; text: string }
  | { k: 'class'; negated: boolean; ranges: Array<[number, number]> }
  | { k: 'ref'; name: string }
  | { k: 'alt'; options: Node[][] }
  | { k: 'rep'; node: Node; min: number; max: number | null };

export type Grammar = Map<string, Node>;

function parseEscape(s: string, i: number): [number, number] {
  const c = s[i + 1]!;
  const simple: Record<string, string> = {
    n: '\n',
    r: '\r',
    t: '\t',
    '\\': '\\',
    '"': '"',
    '[': '[',
    ']': ']',
    '-': '-',
    '/': '/',
  };
  if (c in simple) return [simple[c]!.codePointAt(0)!, i + 2];
  const len = c === 'x' ? 2 : c === 'u' ? 4 : c === 'U' ? 8 : 0;
  if (len === 0) throw new Error(`bad escape \\${c} in ${s}`);
  return [parseInt(s.slice(i + 2, i + 2 + len), 16), i + 2 + len];
}

function parseBody(s: string): Node {
  let i = 0;
  const ws = () => {
    while (i < s.length && /\s/.test(s[i]!)) i++;
  };
  const alt = (): Node => {
    const options: Node[][] = [seq()];
    ws();
    while (s[i] === '|') {
      i++;
      options.push(seq());
      ws();
    }
    return options.length === 1 && options[0]!.length === 1 ? options[0]![0]! : { k: 'alt', options };
  };
  const seq = (): Node[] => {
    const out: Node[] = [];
    for (;;) {
      ws();
      if (i >= s.length || s[i] === '|' || s[i] === ')') return out;
      let node = atom();
      ws();
      for (;;) {
        if (s[i] === '?') {
          node = { k: 'rep', node, min: 0, max: 1 };
          i++;
        } else if (s[i] === '*') {
          node = { k: 'rep', node, min: 0, max: null };
          i++;
        } else if (s[i] === '+') {
          node = { k: 'rep', node, min: 1, max: null };
          i++;
        } else if (s[i] === '{') {
          const end = s.indexOf('}', i);
          const [a, b] = s.slice(i + 1, end).split(',');
          node = { k: 'rep', node, min: Number(a), max: b === undefined ? Number(a) : b === '' ? null : Number(b) };
          i = end + 1;
        } else break;
        ws();
      }
      out.push(node);
    }
  };
  const atom = (): Node => {
    const c = s[i]!;
    if (c === '"') {
      let text = '';
      i++;
      while (s[i] !== '"') {
        if (s[i] === '\\') {
          const [cp, j] = parseEscape(s, i);
          text += String.fromCodePoint(cp);
          i = j;
        } else {
          const cp = s.codePointAt(i)!;
          text += String.fromCodePoint(cp);
          i += cp > 0xffff ? 2 : 1;
        }
      }
      i++;
      return { k: 'lit', text };
    }
    if (c === '[') {
      i++;
      const negated = s[i] === '^';
      if (negated) i++;
      const ranges: Array<[number, number]> = [];
      const one = (): number => {
        if (s[i] === '\\') {
          const [cp, j] = parseEscape(s, i);
          i = j;
          return cp;
        }
        const cp = s.codePointAt(i)!;
        i += cp > 0xffff ? 2 : 1;
        return cp;
      };
      while (s[i] !== ']') {
        const a = one();
        if (s[i] === '-' && s[i + 1] !== ']') {
          i++;
          ranges.push([a, one()]);
        } else ranges.push([a, a]);
      }
      i++;
      return { k: 'class', negated, ranges };
    }
    if (c === '.') {
      i++;
      return { k: 'class', negated: true, ranges: [] };
    }
    if (c === '(') {
      i++;
      const n = alt();
      ws();
      if (s[i] !== ')') throw new Error(`expected ) at ${i} in ${s}`);
      i++;
      return n;
    }
    const m = /^[a-zA-Z0-9-]+/.exec(s.slice(i));
    if (!m) throw new Error(`unexpected ${c} at ${i} in ${s}`);
    i += m[0].length;
    return { k: 'ref', name: m[0] };
  };
  const n = alt();
  if (i < s.length) throw new Error(`trailing input at ${i} in ${s}`);
  return n;
}

export function parseGbnf(text: string): Grammar {
  const g: Grammar = new Map();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const at = line.indexOf('::=');
    g.set(line.slice(0, at).trim(), parseBody(line.slice(at + 3)));
  }
  for (const [, node] of g) checkRefs(node, g);
  return g;
}

function checkRefs(n: Node, g: Grammar): void {
  if (n.k === 'ref' && !g.has(n.name)) throw new Error(`undefined rule ${n.name}`);
  if (n.k === 'alt') n.options.forEach((o) => o.forEach((x) => checkRefs(x, g)));
  if (n.k === 'rep') checkRefs(n.node, g);
}

/** Minimal output length of each rule (fixed point), to steer deep walks towards termination. */
function minCosts(g: Grammar): Map<string, number> {
  const cost = new Map<string, number>([...g.keys()].map((k) => [k, Infinity]));
  const of = (n: Node): number => {
    switch (n.k) {
      case 'lit':
        return n.text.length;
      case 'class':
        return 1;
      case 'ref':
        return cost.get(n.name)!;
      case 'alt':
        return Math.min(...n.options.map((o) => o.reduce((a, x) => a + of(x), 0)));
      case 'rep':
        return n.min === 0 ? 0 : n.min * of(n.node);
    }
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const [k, n] of g) {
      const c = of(n);
      if (c < cost.get(k)!) {
        cost.set(k, c);
        changed = true;
      }
    }
  }
  return Object.assign(cost, { of });
}

/** Characters a negated class may draw from: ASCII, a few accented letters, an emoji (astral). */
const POOL = [...Array.from({ length: 128 }, (_, i) => i), 0xe9, 0xfc, 0x4e2d, 0x1f600];

export function sampleGbnf(text: string, seed: number, maxDepth = 12): string {
  const g = parseGbnf(text);
  const costs = minCosts(g) as Map<string, number> & { of(n: Node): number };
  const rng = new SeededRandom(seed);
  const rand = () => rng.next();
  const pick = (n: number) => Math.floor(rand() * n);
  let out = '';
  const walk = (n: Node, depth: number): void => {
    switch (n.k) {
      case 'lit':
        out += n.text;
        return;
      case 'class': {
        const inClass = (cp: number) => n.ranges.some(([a, b]) => cp >= a && cp <= b);
        if (!n.negated) {
          const [a, b] = n.ranges[pick(n.ranges.length)]!;
          out += String.fromCodePoint(a + pick(b - a + 1));
        } else {
          const allowed = POOL.filter((cp) => !inClass(cp));
          out += String.fromCodePoint(allowed[pick(allowed.length)]!);
        }
        return;
      }
      case 'ref':
        walk(g.get(n.name)!, depth + 1);
        return;
      case 'alt': {
        let options = n.options;
        if (depth > maxDepth) {
          const c = options.map((o) => o.reduce((a, x) => a + costs.of(x), 0));
          const best = Math.min(...c);
          options = options.filter((_, i) => c[i] === best);
        }
        for (const x of options[pick(options.length)]!) walk(x, depth + 1);
        return;
      }
      case 'rep': {
        let count = n.min;
        if (depth <= maxDepth) while ((n.max === null || count < n.max) && rand() < 0.6) count++;
        for (let i = 0; i < count; i++) walk(n.node, depth + 1);
        return;
      }
    }
  };
  walk(g.get('root')!, 0);
  return out;
}
