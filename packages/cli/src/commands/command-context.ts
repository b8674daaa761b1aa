import { type JournalKey, type Redactor, type RunStore, StepwiseError } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import { isPostgresStoreConfig, openPostgresStore, openSqliteStore, runnerRedactor } from '../create-runner.js';
import { userJournalKey } from '../journal-key.js';
import { type LoadedConfig, loadConfig } from '../load-config.js';
import { type ConfigOverrides, runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { type CommandIo, createPalette, type Palette } from '../terminal.js';

/** What every command gets: its arguments, the process streams and a palette for stdout. */
export interface CommandContext {
  readonly io: CommandIo;
  readonly palette: Palette;
  readonly errorPalette: Palette;
}

export function commandContext(io: CommandIo): CommandContext {
  return { io, palette: createPalette(io.stdout, io.env), errorPalette: createPalette(io.stderr, io.env) };
}

export function print(context: CommandContext, text = ''): void {
  context.io.stdout.write(`${text}\n`);
}

export function printError(context: CommandContext, text: string): void {
  context.io.stderr.write(`${text}\n`);
}

/** The configuration a command's `--config`/cwd select, refused unless it and its plugin files are trusted. */
export function loadCommandConfig(context: CommandContext, configFile: string | undefined): Promise<LoadedConfig> {
  return loadConfig({
    cwd: context.io.cwd,
    ...(configFile ? { file: configFile } : {}),
    trust: { env: context.io.env, cwd: context.io.cwd },
  });
}

/** The redactor `stepwise run` would use with this configuration, for what a command prints itself. */
export function commandRedactor(context: CommandContext, loaded: LoadedConfig): Redactor {
  return runnerRedactor(runnerOptionsFromConfig(loaded, { cwd: context.io.cwd }));
}

/** The key of the journals this user's commands write and check (`~/.config/stepwise/journal.key`). */
export function commandJournalKey(context: CommandContext): Promise<JournalKey> {
  return userJournalKey(context.io.env);
}

/**
 * Opens the journal the configuration and `--workspace`/`--db` point at, for read commands, with
 * the key its runs are checked with.
 */
export async function openCommandStore(
  context: CommandContext,
  values: Record<string, string | boolean | undefined>,
): Promise<{ store: RunStore; database: string; loaded: LoadedConfig; journalKey: JournalKey }> {
  const loaded = await loadCommandConfig(context, values.config as string | undefined);
  const overrides: ConfigOverrides = {
    cwd: context.io.cwd,
    ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
    ...(typeof values.db === 'string' ? { database: values.db } : {}),
  };
  const { database, store } = runnerOptionsFromConfig(loaded, overrides);
  const journalKey = await commandJournalKey(context);
  if (isPostgresStoreConfig(store)) {
    return { store: await openPostgresStore(store), database: store.url, loaded, journalKey };
  }
  return { store: await openSqliteStore(database), database, loaded, journalKey };
}

/** One line for an error: `E004 plan not found: x.json`. */
export function describeError(error: unknown): string {
  if (StepwiseError.isInstance(error)) {
    if (error.name === 'UsageError') return error.message;
    return `${error.code} ${error.message}`;
  }
  return messageOf(error);
}
