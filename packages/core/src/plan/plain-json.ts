/**
 * `value` as plain JSON data, read once: what `JSON.stringify` makes of it (each `toJSON` called and
 * each getter read once; `undefined`, functions and symbols left out, `NaN` and the infinities made
 * `null`, as JSON does), parsed back into new objects. A tool's output is kept in this form, so the
 * journal's hash chain, the store's row, a later step's reference and the result a host reads are
 * one value, whatever the tool's own object does after it returned. Throws what `JSON.stringify`
 * throws: a BigInt, a cycle, a `toJSON` or a getter that throws.
 */
export function plainJson(value: unknown): unknown {
  if (typeof value === 'string' || typeof value === 'boolean' || value === null || value === undefined) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  const text = JSON.stringify(value);
  return text === undefined ? undefined : JSON.parse(text);
}
