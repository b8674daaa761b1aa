import type { z } from 'zod';
import { didYouMean } from './did-you-mean.js';

/** One schema problem at a JSON pointer. */
export interface SchemaIssueProblem {
  readonly path: string;
  readonly message: string;
}

interface SchemaNode {
  readonly _zod: { readonly def: Record<string, unknown> & { readonly type: string } };
}

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'nonoptional', 'catch']);

function unwrap(schema: SchemaNode | undefined): SchemaNode | undefined {
  let current = schema;
  while (current) {
    const def = current._zod.def;
    if (WRAPPERS.has(def.type)) current = def.innerType as SchemaNode;
    else if (def.type === 'pipe') current = def.in as SchemaNode;
    else if (def.type === 'lazy') current = (def.getter as () => SchemaNode)();
    else return current;
  }
  return undefined;
}

/** The keys a (zod 4) object schema allows at `path`, when the path leads through objects, arrays and records. */
function keysAt(schema: SchemaNode, path: readonly PropertyKey[]): string[] {
  let current = unwrap(schema);
  for (const segment of path) {
    const def = current?._zod.def;
    if (def?.type === 'object') current = unwrap((def.shape as Record<string, SchemaNode>)[String(segment)]);
    else if (def?.type === 'array') current = unwrap(def.element as SchemaNode);
    else if (def?.type === 'record') current = unwrap(def.valueType as SchemaNode);
    else return [];
  }
  const def = current?._zod.def;
  return def?.type === 'object' ? Object.keys(def.shape as Record<string, unknown>) : [];
}

function pointer(path: readonly PropertyKey[]): string {
  return path.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/**
 * Zod issues as problems at JSON pointers. An unknown key is reported at the key itself (so a
 * located error points at the line to edit), with the closest allowed key as a suggestion:
 * `unknown key "dependOn"; did you mean "dependsOn"?`.
 * Shared with @stepwise/cli; not part of the public API.
 * @internal
 */
export function schemaIssueProblems(
  issues: readonly z.core.$ZodIssue[],
  schema: z.ZodType,
  noun = 'key',
): SchemaIssueProblem[] {
  const problems: SchemaIssueProblem[] = [];
  for (const issue of issues) {
    const base = pointer(issue.path);
    // Refinements that re-raise an inner object's issues keep `keys` but not the code.
    const keys = (issue as { keys?: unknown }).keys;
    if (!Array.isArray(keys) || keys.length === 0) {
      problems.push({ path: base, message: issue.message });
      continue;
    }
    const allowed = keysAt(schema as unknown as SchemaNode, issue.path);
    for (const key of keys as string[]) {
      problems.push({
        path: `${base}${pointer([key])}`,
        message: `unknown ${noun} "${key}"${didYouMean(key, allowed)}`,
      });
    }
  }
  return problems;
}
