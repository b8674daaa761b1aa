import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ErrorCodes, StepwiseError } from '@stepwise/core';

export type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** A command-line mistake: one line on stderr, exit 2. */
export class UsageError extends StepwiseError {
  constructor(message: string) {
    super(ErrorCodes.INPUT_INVALID, message);
    this.name = 'UsageError';
  }
}

export interface ParsedArguments {
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: readonly string[];
}

/** Options every command accepts. */
export const COMMON_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionSpecs;

/** `--config`, `--workspace`, `--db`: where a command finds its configuration and journal. */
export const STORE_OPTIONS = {
  config: { type: 'string', short: 'c' },
  workspace: { type: 'string', short: 'w' },
  db: { type: 'string' },
} as const satisfies OptionSpecs;

/** Strict parsing: unknown flags and missing values are usage errors naming the command. */
export function parseCommandArguments(
  command: string,
  argv: readonly string[],
  options: OptionSpecs,
  positionals: { readonly min: number; readonly max: number; readonly names: string },
): ParsedArguments {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const message = (error as Error).message.split('\n')[0]?.replace(/\. To specify a positional.*$/, '') ?? '';
    throw new UsageError(`stepwise ${command}: ${message} (see stepwise ${command} --help)`);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) return { values, positionals: parsed.positionals };
  if (parsed.positionals.length < positionals.min) {
    throw new UsageError(`stepwise ${command}: missing ${positionals.names} (see stepwise ${command} --help)`);
  }
  if (parsed.positionals.length > positionals.max) {
    throw new UsageError(
      `stepwise ${command}: unexpected argument "${parsed.positionals[positionals.max]}" (see stepwise ${command} --help)`,
    );
  }
  return { values, positionals: parsed.positionals };
}

/** A flag restricted to some words (`--engine dag`). */
export function choice<T extends string>(
  command: string,
  flag: string,
  value: string | boolean | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`stepwise ${command}: --${flag} must be one of ${allowed.join(', ')} (got "${String(value)}")`);
}

/** A positive integer flag (`--concurrency 4`). */
export function positiveInteger(
  command: string,
  flag: string,
  value: string | boolean | undefined,
): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (typeof value === 'string' && Number.isInteger(number) && number > 0) return number;
  throw new UsageError(`stepwise ${command}: --${flag} must be a positive integer (got "${String(value)}")`);
}
