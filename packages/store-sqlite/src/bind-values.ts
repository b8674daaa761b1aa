export type Bindable = string | number | bigint | null;

/** Columns take what the event holds; anything SQLite cannot bind is kept as JSON rather than lost. */
export function scalar(value: unknown): Bindable {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'bigint':
      return value;
    case 'boolean':
      return value ? 1 : 0;
    case 'undefined':
      return null;
    default:
      return value === null ? null : ((JSON.stringify(value) as string | undefined) ?? null);
  }
}

/** A JSON column: `NULL` for `undefined`. */
export function json(value: unknown): string | null {
  return value === undefined ? null : ((JSON.stringify(value) as string | undefined) ?? null);
}
