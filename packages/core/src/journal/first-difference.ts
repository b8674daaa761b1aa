const show = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
};

/**
 * Where `actual` first differs from `expected`, or `undefined` when they are equal. Like vitest's
 * `toEqual`: a property holding `undefined` counts as absent.
 */
export function firstDifference(actual: unknown, expected: unknown, path = ''): string | undefined {
  if (Object.is(actual, expected)) return undefined;
  const objects = typeof actual === 'object' && actual !== null && typeof expected === 'object' && expected !== null;
  if (!objects || Array.isArray(actual) !== Array.isArray(expected)) {
    return `${path || '/'}: got ${show(actual)}, the fold says ${show(expected)}`;
  }
  if (Array.isArray(actual) && Array.isArray(expected) && actual.length !== expected.length) {
    return `${path || '/'}: got ${actual.length} items, the fold says ${expected.length}: got ${show(actual)}, expected ${show(expected)}`;
  }
  const left = actual as Record<string, unknown>;
  const right = expected as Record<string, unknown>;
  const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
  for (const key of keys) {
    const found = firstDifference(left[key], right[key], `${path}/${key}`);
    if (found) return found;
  }
  return undefined;
}
