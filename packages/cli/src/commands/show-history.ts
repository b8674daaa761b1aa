import type { RunEvent } from '@stepwise/core';
import type { FoldedRun } from '@stepwise/core/store';
import {
  type AttemptEntry,
  attemptHistory,
  describeValidation,
  type RevisionEntry,
  revisionHistory,
} from '@stepwise/dashboard/report';
import { alignColumns } from '../terminal.js';
import { type CommandContext, print } from './command-context.js';

/** What `show --json` adds for a revised plan and a code-agent run. */
export function historyOf(
  run: FoldedRun,
  events: readonly RunEvent[],
): { revisions: RevisionEntry[]; attempts: AttemptEntry[] } {
  return { revisions: revisionHistory(run.revisions), attempts: attemptHistory(events) };
}

/** The plan's revisions and the code agent's attempts (validation, rollback), when the run has any. */
export function printHistory(context: CommandContext, run: FoldedRun, events: readonly RunEvent[]): void {
  const { palette } = context;
  const { revisions, attempts } = historyOf(run, events);
  if (revisions.length > 0) {
    print(context, palette.bold('Revisions'));
    const rows = revisions.map((entry) => [
      `revision ${entry.revision}`,
      `by ${entry.by}${entry.approvedBy ? `, approved by ${entry.approvedBy}` : ''}`,
      entry.at,
      entry.changes.join('  '),
      entry.reason ? palette.gray(entry.reason) : '',
    ]);
    for (const line of alignColumns(rows, '  ')) print(context, `  ${line}`);
    print(context);
  }
  if (attempts.length > 0) {
    print(context, `${palette.bold('Attempts')} ${palette.gray('(each validated; a failed one rolled back)')}`);
    for (const entry of attempts) {
      const changed = [...entry.changes.modified, ...entry.changes.created, ...entry.changes.deleted];
      const validation = entry.validation ? describeValidation(entry.validation) : 'not validated';
      print(
        context,
        `  ${entry.stepId} attempt ${entry.attempt}  step ${entry.status}${entry.error ? ` (${entry.error})` : ''}  ${entry.validation?.passed ? palette.green(validation) : palette.red(validation)}  ${palette.gray(entry.implementationRunId)}`,
      );
      if (changed.length > 0) print(context, `      changed  ${changed.join(', ')}`);
      for (const test of entry.validation?.failingTests ?? []) {
        print(context, `      ${palette.red('failing')}  ${test.file ? `${test.file}: ` : ''}${test.name}`);
      }
      if (entry.rollback) {
        const undone = [
          ...entry.rollback.restored.map((file) => `restored ${file}`),
          ...entry.rollback.removed.map((file) => `removed ${file}`),
        ];
        print(context, `      ${palette.yellow('rolled back')}  ${undone.join(', ') || 'nothing had changed'}`);
      }
    }
    print(context);
  }
}
