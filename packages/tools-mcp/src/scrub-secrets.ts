import { REDACTED } from '@stepwise/core/engine';

/**
 * Replaces every secret value of the server's environment in `value` (strings anywhere in a
 * JSON value) with `[REDACTED]`: the rule `run_command` applies to a command's output, so a
 * server that echoes the token it was given does not put it in the journal or the model's context.
 */
export function scrubSecrets<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const visit = (item: unknown): unknown => {
    if (typeof item === 'string') {
      let text = item;
      for (const secret of secrets) if (text.includes(secret)) text = text.split(secret).join(REDACTED);
      return text;
    }
    if (Array.isArray(item)) return item.map(visit);
    if (typeof item === 'object' && item !== null) {
      return Object.fromEntries(Object.entries(item).map(([key, entry]) => [visit(key), visit(entry)]));
    }
    return item;
  };
  return visit(value) as T;
}
