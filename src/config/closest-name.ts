/**
 * The known name closest to a mistyped one (`--modle` -> `--model`), for "did you mean" in error messages:
 * the one at the smallest edit distance (insert, delete, replace, swap of neighbours), if that distance is at
 * most a third of the typed name's length (at least 1, at most 3); otherwise undefined.
 */
export function closestName(typed: string, known: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(typed.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const name of known) {
    const d = editDistance(typed, name);
    if (d < bestDistance) [best, bestDistance] = [name, d];
  }
  return best;
}

/** Optimal string alignment distance (Damerau-Levenshtein without repeated edits of one piece). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
