import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from 'diff';

export interface UnifiedDiffOptions {
  /** Shown in the `---`/`+++` header. Default `file`. */
  readonly path?: string;
  /** Unchanged lines around each change. Default 3. */
  readonly context?: number;
}

/**
 * A unified diff (the `diff -u` format, through the `diff` package as tools-node uses it) of two
 * texts, or `""` when they are equal. A missing "before" (a new file) is the empty string.
 */
export function unifiedDiff(before: string, after: string, options: UnifiedDiffOptions = {}): string {
  if (before === after) return '';
  const name = options.path ?? 'file';
  const patch = structuredPatch(`a/${name}`, `b/${name}`, before, after, undefined, undefined, {
    context: options.context ?? 3,
  });
  return formatPatch(patch, FILE_HEADERS_ONLY);
}
