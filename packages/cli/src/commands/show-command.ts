import {
  ErrorCodes,
  type ExecutionRecord,
  type JournalKey,
  journalTamperedError,
  type RunEvent,
  type RunStore,
  readVerifiedJournal,
  StepwiseError,
} from '@stepwise/core';
import { canonicalJson } from '@stepwise/core/engine';
import { executionRecord, foldRun, summarizeRun } from '@stepwise/core/store';
import { formatDuration, goalProgressByStep, stepTimings } from '@stepwise/dashboard/report';
import { type OptionSpecs, STORE_OPTIONS } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { alignColumns, fitWidth, padEnd } from '../terminal.js';
import { type CommandContext, openCommandStore, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';
import { statusColour } from './runs-command.js';
import { historyOf, printHistory } from './show-history.js';

const options = {
  ...STORE_OPTIONS,
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

/** How `show` prints, and the key it checks runs with. */
interface Shown {
  readonly json: boolean;
  readonly journalKey: JournalKey;
}

/** Room for one value on a line: the terminal's width, or 160 columns when piped. */
function valueWidth(context: CommandContext): number {
  return (context.io.stdout.isTTY ? Math.max(60, context.io.stdout.columns ?? 120) : 160) - 16;
}

function compact(value: unknown, length: number): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return fitWidth(text.replace(/\s+/g, ' '), length);
}

function tail(text: string, lines: number): string[] {
  return text.replace(/\n$/, '').split('\n').slice(-lines);
}

function printExecutionSummary(context: CommandContext, record: ExecutionRecord): void {
  const { palette } = context;
  const width = valueWidth(context);
  const exit = record.exitCode === undefined ? '' : ` exit ${record.exitCode}`;
  print(
    context,
    `  ${palette.gray(record.executionId)}  ${record.stepId}${record.turn === undefined ? '' : ` turn ${record.turn}`}  attempt ${record.attempt}  ${palette.cyan(record.tool)} (${record.effect})  ${statusColour(context, record.status)}${exit}  ${record.durationMs === undefined ? '' : formatDuration(record.durationMs)}`,
  );
  print(context, `      args    ${compact(record.args, width)}`);
  if (record.error)
    print(context, `      ${palette.red('error')}   ${record.error.code} ${compact(record.error.message, width)}`);
  if (record.output !== undefined) print(context, `      output  ${compact(record.output, width)}`);
  for (const artifact of record.artifacts) {
    if (artifact.kind !== 'stderr' || artifact.content.trim() === '') continue;
    for (const line of tail(artifact.content, 3))
      print(context, `      ${palette.gray('stderr')}  ${compact(line, width)}`);
  }
  for (const approval of record.why.approvals.filter((entry) => entry.executionId === record.executionId)) {
    print(
      context,
      `      approval ${approval.decision} (${approval.source}${approval.by ? `, by ${approval.by}` : ''})${approval.reason ? `: ${approval.reason}` : ''}`,
    );
  }
}

function printExecution(context: CommandContext, record: ExecutionRecord): void {
  const { palette } = context;
  print(context, `${palette.bold('Execution')} ${record.executionId}  ${statusColour(context, record.status)}`);
  print(
    context,
    `${palette.bold('What')}      ${record.tool} (${record.effect}) in step "${record.stepId}", attempt ${record.attempt}${record.turn === undefined ? '' : `, model turn ${record.turn}`}, run ${record.runId}`,
  );
  print(context, `${palette.bold('Args')}      ${JSON.stringify(record.args, null, 2).replace(/\n/g, '\n          ')}`);
  print(
    context,
    `${palette.bold('When')}      ${record.startedAt} → ${record.finishedAt ?? 'did not finish'}${record.durationMs === undefined ? '' : ` (${formatDuration(record.durationMs)})`}`,
  );
  const whether =
    record.status === 'succeeded'
      ? 'succeeded'
      : `${record.status}${record.error ? `: ${record.error.code} ${record.error.message}` : ''}`;
  print(
    context,
    `${palette.bold('Result')}    ${whether}${record.exitCode === undefined ? '' : ` (exit code ${record.exitCode})`}`,
  );
  if (record.output !== undefined) {
    print(
      context,
      `${palette.bold('Output')}    ${JSON.stringify(record.output, null, 2).replace(/\n/g, '\n          ')}`,
    );
  }
  for (const artifact of record.artifacts) {
    print(
      context,
      `${palette.bold(padEnd(artifact.kind, 9))} ${artifact.content.replace(/\n$/, '').replace(/\n/g, '\n          ')}`,
    );
  }
  const { why } = record;
  print(
    context,
    `${palette.bold('Why')}       plan ${why.planId} (digest ${why.planDigest.slice(0, 12)}…)${why.goal ? `, goal: ${why.goal}` : ''}`,
  );
  if (why.stepDescription) print(context, `          step: ${why.stepDescription}`);
  if (why.authorization) {
    print(
      context,
      `          plan approved by ${why.authorization.by} at ${why.authorization.at} (${why.authorization.id})`,
    );
  }
  for (const approval of why.approvals) {
    print(
      context,
      `          approval ${approval.decision} by ${approval.by ?? approval.source} at ${approval.at}${approval.reason ? `: ${approval.reason}` : ''}`,
    );
  }
}

/** Goal steps: where each stood after every model turn. */
function printGoalProgress(context: CommandContext, byStep: ReadonlyMap<string, readonly string[]>): void {
  if (byStep.size === 0) return;
  print(context);
  print(context, context.palette.bold('Goal progress'));
  for (const [stepId, lines] of byStep) {
    for (const line of lines) print(context, `  ${stepId}  ${compact(line, valueWidth(context))}`);
  }
}

async function showExecution(context: CommandContext, store: RunStore, id: string, shown: Shown): Promise<number> {
  const stored = await store.getExecution(id);
  if (!stored)
    throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `execution ${id} is not in the journal`, { location: id });
  // The store builds the record partly from its projections: print the one the run's (checked)
  // journal gives, and refuse when the store's differs from it.
  const { events } = await readVerifiedJournal(store, stored.runId, { journalKey: shown.journalKey });
  const record = executionRecord(foldRun(events, stored.runId), id);
  if (!record || canonicalJson(record) !== canonicalJson(stored)) {
    const difference = record ? 'it differs from what the journal says' : 'the journal has no such execution';
    throw journalTamperedError({
      ok: false,
      runId: stored.runId,
      reason: 'projection',
      view: `execution ${id}`,
      difference,
    });
  }
  if (shown.json) print(context, JSON.stringify(record, null, 2));
  else printExecution(context, record);
  return ExitCodes.COMPLETED;
}

/** A run as `show` prints it: the fold, step timings, its steps in plan order and its execution records. */
function runView(events: readonly RunEvent[]) {
  const run = foldRun(events);
  // A wait still open (the run is waiting) counts until now.
  const timings = stepTimings(events, Date.now() - Date.parse((events[0] as RunEvent).at));
  const records = [...run.executions.keys()]
    .map((executionId) => executionRecord(run, executionId))
    .filter((record): record is ExecutionRecord => record !== undefined);
  const steps = (run.plan?.steps ?? []).map((step) => ({
    stepId: step.id,
    tool: step.tool,
    status: run.steps.get(step.id)?.status ?? 'pending',
    result: run.steps.get(step.id)?.result,
    toolMs: timings.steps.get(step.id)?.toolMs,
    waitingMs: timings.steps.get(step.id)?.waitingMs ?? 0,
  }));
  return { run, timings, records, steps };
}

type RunView = ReturnType<typeof runView>;

function printRunHeader(context: CommandContext, { run, timings }: RunView): void {
  const { palette } = context;
  print(context, `${palette.bold('Run')} ${run.runId}  ${statusColour(context, run.status)}  ${run.engine} engine`);
  print(
    context,
    `  plan ${run.planId} (digest ${run.planDigest.slice(0, 12)}…)${run.goal ? `  goal: ${run.goal}` : ''}`,
  );
  print(
    context,
    `  started ${run.createdAt}${run.finishedAt ? `  finished ${run.finishedAt}` : ''}${run.durationMs === undefined ? '' : `  (${formatDuration(run.durationMs)})`}${timings.waitingMs > 0 ? `  ${formatDuration(timings.waitingMs)} waiting for a person` : ''}`,
  );
  if (run.authorization) print(context, `  approved by ${run.authorization.by} at ${run.authorization.at}`);
  if (run.usage)
    print(
      context,
      `  tokens ${run.usage.totalTokens} (${run.usage.promptTokens} prompt, ${run.usage.completionTokens} completion)`,
    );
}

function printSteps(context: CommandContext, steps: RunView['steps']): void {
  const { palette } = context;
  print(context, palette.bold('Steps'));
  const rows = steps.map((step) => {
    const result = step.result;
    return [
      step.stepId,
      palette.cyan(step.tool ?? 'agentic'),
      statusColour(context, step.status),
      result ? `${result.attempt} attempt${result.attempt === 1 ? '' : 's'}` : '',
      step.toolMs === undefined ? '' : formatDuration(step.toolMs),
      step.waitingMs > 0 ? palette.yellow(`waited ${formatDuration(step.waitingMs)}`) : '',
      result?.error ? `${palette.red(result.error.code)} ${compact(result.error.message, 100)}` : '',
    ];
  });
  for (const line of alignColumns(rows, '  ')) print(context, line);
}

async function showRun(context: CommandContext, store: RunStore, id: string, shown: Shown): Promise<number> {
  const { events } = await readVerifiedJournal(store, id, { journalKey: shown.journalKey });
  const { json } = shown;
  if (events.length === 0)
    throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${id} is not in the journal`, { location: id });
  const view = runView(events);
  const { run, timings, records, steps } = view;
  if (json) {
    const history = historyOf(run, events);
    print(
      context,
      JSON.stringify(
        { run: { ...summarizeRun(run), waitingMs: timings.waitingMs }, steps, executions: records, ...history },
        null,
        2,
      ),
    );
    return ExitCodes.COMPLETED;
  }
  const { palette } = context;
  printRunHeader(context, view);
  print(context);
  printSteps(context, steps);
  printGoalProgress(context, goalProgressByStep(events));
  print(context);
  printHistory(context, run, events);
  print(context, `${palette.bold('Executions')} ${palette.gray('(audit trail, in order)')}`);
  if (records.length === 0) print(context, palette.gray('  none: no tool was called'));
  for (const record of records) printExecutionSummary(context, record);
  print(context);
  print(
    context,
    palette.gray(`stepwise show <executionId> for one execution; stepwise report ${run.runId} for the HTML report`),
  );
  return ExitCodes.COMPLETED;
}

export const showCommand: CommandDefinition = {
  name: 'show',
  summary: 'show a run (steps and its audit trail) or one execution',
  positionals: { min: 1, max: 1, names: '<runId|executionId>' },
  options,
  help: `Usage: stepwise show <runId|executionId> [--json] [--db F]

For a run: its plan, status, each step's outcome, and every execution in order (the audit trail:
tool, arguments, exit code, output, stderr, approvals). For an execution (ex_…): the full audit
bundle — what ran, when, whether it worked, what it produced, and why (plan, goal, approvals).
A run whose journal was changed outside Stepwise is refused (E507; see stepwise verify).

Options:
      --json   the run summary, step results and execution records (or one record) as JSON
      --db F   the SQLite journal (default: the configuration's)

Examples:
  stepwise show run_0123abcd
  stepwise show ex_89ef0123 --json`,
  async run(context: CommandContext, { values, positionals }) {
    const id = positionals[0] as string;
    const { store, journalKey } = await openCommandStore(context, values);
    try {
      const shown = { json: Boolean(values.json), journalKey };
      return id.startsWith('ex_')
        ? await showExecution(context, store, id, shown)
        : await showRun(context, store, id, shown);
    } finally {
      await store.close();
    }
  },
};
