import { parseCommandArguments, UsageError } from './command-arguments.js';
import { approveCommand } from './commands/approve-command.js';
import { cancelCommand } from './commands/cancel-command.js';
import { commandContext, describeError, printError } from './commands/command-context.js';
import type { CommandDefinition } from './commands/command-definition.js';
import { enqueueCommand } from './commands/enqueue-command.js';
import { graphCommand } from './commands/graph-command.js';
import { planCommand } from './commands/plan-command.js';
import { reportCommand } from './commands/report-command.js';
import { pendingCommand, respondCommand } from './commands/respond-command.js';
import { resumeCommand, runCommand } from './commands/run-command.js';
import { runsCommand } from './commands/runs-command.js';
import { showCommand } from './commands/show-command.js';
import { solveCommand } from './commands/solve-command.js';
import { trustCommand } from './commands/trust-command.js';
import { uiCommand } from './commands/ui-command.js';
import { validateCommand } from './commands/validate-command.js';
import { verifyCommand } from './commands/verify-command.js';
import { workerCommand } from './commands/worker-command.js';
import { ExitCodes, exitCodeForError } from './exit-codes.js';
import { type CommandIo, processIo } from './terminal.js';
import { version } from './version.js';

export const COMMANDS: readonly CommandDefinition[] = [
  runCommand,
  resumeCommand,
  pendingCommand,
  respondCommand,
  cancelCommand,
  validateCommand,
  approveCommand,
  runsCommand,
  showCommand,
  reportCommand,
  verifyCommand,
  uiCommand,
  graphCommand,
  workerCommand,
  enqueueCommand,
  planCommand,
  solveCommand,
  trustCommand,
];

function overview(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return `stepwise — run plans of tool steps safely, observably and durably

Usage: stepwise <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`).join('\n')}

Every command takes --help. Configuration: stepwise.config.json (or .jsonc/.ts/.mjs/.js) in the
current directory or above; JSON files, plans included, may have comments and trailing commas. A
configuration and the plugin files it names load only once trusted (stepwise trust). The journal
defaults to .stepwise/stepwise.db in the workspace.

Examples:
  stepwise validate plan.json
  stepwise run plan.json
  stepwise runs --status failed
  stepwise report <runId> --out report.html`;
}

/** Runs one command line; resolves to the exit code. Never throws. */
export async function main(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  const context = commandContext(io);
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((command) => command.name === rest[0]) : undefined;
    io.stdout.write(`${topic ? topic.help : overview()}\n`);
    return ExitCodes.COMPLETED;
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write(`${version()}\n`);
    return ExitCodes.COMPLETED;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    printError(context, `stepwise: unknown command "${name}" (commands: ${COMMANDS.map((c) => c.name).join(', ')})`);
    return ExitCodes.INVALID_INPUT;
  }
  try {
    const parsed = parseCommandArguments(command.name, rest, command.options, command.positionals);
    if (parsed.values.help) {
      io.stdout.write(`${command.help}\n`);
      return ExitCodes.COMPLETED;
    }
    return await command.run(context, parsed);
  } catch (error) {
    printError(
      context,
      error instanceof UsageError ? error.message : `stepwise ${command.name}: ${describeError(error)}`,
    );
    return exitCodeForError(error);
  }
}
