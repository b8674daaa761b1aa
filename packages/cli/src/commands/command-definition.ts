import type { OptionSpecs, ParsedArguments } from '../command-arguments.js';
import type { CommandContext } from './command-context.js';

/** One `stepwise <name>` command. */
export interface CommandDefinition {
  readonly name: string;
  /** One line for `stepwise --help`. */
  readonly summary: string;
  /** `stepwise <name> --help`, with examples. */
  readonly help: string;
  readonly options: OptionSpecs;
  readonly positionals: { readonly min: number; readonly max: number; readonly names: string };
  /** Resolves to the process exit code. */
  run(context: CommandContext, parsed: ParsedArguments): Promise<number>;
}
