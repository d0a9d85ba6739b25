/**
 * A GBNF expression matching exactly the decimal integers (JSON form: no leading zeros, no "+", no "-0")
 * from `min` to `max`. The approach of llama.cpp's `_generate_min_max_int` (json_schema_to_grammar): split
 * the range into digit-count bands and build each band digit by digit. An open bound is the safe-integer
 * limit, so every integer the grammar admits is exact in JavaScript. Pure.
 */
export function integerRangeExpression(min: number | null, max: number | null): string {
  const lo = Math.max(min === null ? -Number.MAX_SAFE_INTEGER : Math.ceil(min), -Number.MAX_SAFE_INTEGER);
  const hi = Math.min(max === null ? Number.MAX_SAFE_INTEGER : Math.floor(max), Number.MAX_SAFE_INTEGER);
  if (lo > hi) throw new RangeError(`empty integer range ${min}..${max}`);
  const out: string[] = [];
  build(lo, hi, out);
  return out.join('');
}

function digitRange(from: string, to: string, out: string[]): void {
  out.push('[', from === to ? from : `${from}-${to}`, ']');
}

function moreDigits(minDigits: number, maxDigits: number, out: string[]): void {
  out.push('[0-9]');
  if (minDigits === 1 && maxDigits === 1) return;
  out.push('{', String(minDigits));
  if (maxDigits !== minDigits) out.push(',', maxDigits === Infinity ? '' : String(maxDigits));
  out.push('}');
}

const nextChar = (c: string, by: number) => String.fromCharCode(c.charCodeAt(0) + by);

/** Every digit string of from.length digits between from and to (same length), as a GBNF sequence. */
function uniformRange(from: string, to: string, out: string[]): void {
  let i = 0;
  while (i < from.length && from[i] === to[i]) i++;
  if (i > 0) out.push('"', from.slice(0, i), '"');
  if (i >= from.length) return;
  if (i > 0) out.push(' ');
  const subLen = from.length - i - 1;
  const f = from[i]!;
  const t = to[i]!;
  if (subLen === 0) {
    digitRange(f, t, out);
    return;
  }
  const fromSub = from.slice(i + 1);
  const toSub = to.slice(i + 1);
  const zeros = '0'.repeat(subLen);
  const nines = '9'.repeat(subLen);
  let toReached = false;
  out.push('(');
  if (fromSub === zeros) {
    digitRange(f, nextChar(t, -1), out);
    out.push(' ');
    moreDigits(subLen, subLen, out);
  } else {
    out.push('[', f, '] (');
    uniformRange(fromSub, nines, out);
    out.push(')');
    if (f.charCodeAt(0) < t.charCodeAt(0) - 1) {
      out.push(' | ');
      if (toSub === nines) {
        digitRange(nextChar(f, 1), t, out);
        toReached = true;
      } else {
        digitRange(nextChar(f, 1), nextChar(t, -1), out);
      }
      out.push(' ');
      moreDigits(subLen, subLen, out);
    }
  }
  if (!toReached) {
    out.push(' | ');
    digitRange(t, t, out);
    out.push(' ');
    uniformRange(zeros, toSub, out);
  }
  out.push(')');
}

function build(min: number, max: number, out: string[]): void {
  if (min < 0 && max < 0) {
    out.push('"-" (');
    build(-max, -min, out);
    out.push(')');
    return;
  }
  if (min < 0) {
    out.push('"-" (');
    build(1, -min, out);
    out.push(') | ');
    min = 0;
  }
  let minS = String(min);
  const maxS = String(max);
  for (let digits = minS.length; digits < maxS.length; digits++) {
    uniformRange(minS, '9'.repeat(digits), out);
    minS = `1${'0'.repeat(digits)}`;
    out.push(' | ');
  }
  uniformRange(minS, maxS, out);
}
