/** Reports a problem at a JSON path under the options being checked. */
export type Fail = (path: string, message: string) => never;

/** One JSON Pointer segment. */
export function pointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function checkStrings(value: unknown, path: string, fail: Fail): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) fail(path, 'expected an array of strings');
  (value as unknown[]).forEach((item, index) => {
    if (typeof item !== 'string') fail(`${path}/${index}`, 'expected a string');
  });
}

export function checkStringRecord(value: unknown, path: string, fail: Fail): void {
  if (value === undefined) return;
  if (!isRecord(value)) fail(path, 'expected an object of string values');
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (typeof item !== 'string') fail(`${path}/${pointer(key)}`, 'expected a string');
  }
}
