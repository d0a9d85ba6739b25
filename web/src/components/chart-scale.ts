/** Axis scaling for the hand-written charts. Pure. */

/** The next "round" number at or above v (1, 2, 5 x 10^n), so the axis label reads well. */
export function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
