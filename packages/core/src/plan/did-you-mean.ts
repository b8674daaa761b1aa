/**
 * Edit distance with adjacent transpositions (optimal string alignment), so `file_raed` is one
 * edit from `file_read`. Stops early once every path exceeds `limit`.
 */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, (beforePrevious[j - 2] as number) + 1);
      }
      current[j] = value;
      best = Math.min(best, value);
    }
    if (best > limit) return limit + 1;
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * The candidate closest to a misspelt `word`, if one is close enough to be what was meant
 * (a third of the word's length, at least one edit; case differences are free).
 */
export function closestName(word: string, candidates: Iterable<string>): string | undefined {
  const wanted = word.toLowerCase();
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    if (candidate === word) continue;
    const distance = editDistance(wanted, candidate.toLowerCase(), Math.min(limit, bestDistance));
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `; did you mean "x"?` when a candidate is close to `word`, else an empty string. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const closest = closestName(word, candidates);
  return closest === undefined ? '' : `; did you mean "${closest}"?`;
}
