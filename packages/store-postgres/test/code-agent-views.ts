import type { RunEvent } from '@stepwise/core';
import {
  type ExtensionEventContext,
  type ExtensionEventGenerator,
  type ExtensionEventInput,
  firstDifference,
} from '@stepwise/core/testing';
import { sql } from 'kysely';
import type { PostgresStore } from '../src/index.js';

// The code agent's events as `@stepwise/code-agent` journals them (its `code-agent-events.ts`). This
// store reads them by their type in its views but cannot depend on that package, not even for types:
// the code agent and the engine it builds on test with the stores. So they are literal shapes here.

type Where = Pick<ExtensionEventContext, 'stepId' | 'attempt'> & { readonly revision?: number };

function validationEnd(context: ExtensionEventContext, where: Where, index: number): ExtensionEventInput {
  const { draw, runId, text } = context;
  const failed = draw(0, 1) === 1;
  const exitCode = !failed ? 0 : draw(0, 3) === 3 ? null : draw(1, 2);
  return {
    type: 'validation-end',
    ...where,
    ...(index === 0 ? {} : { name: 'lint', optional: draw(0, 1) === 1 }),
    validationRunId: `${runId}_validate_${where.stepId}_${where.attempt}_${index}`,
    command: index === 0 ? ['node', '--test'] : ['npx', 'biome', 'check', text(1)],
    exitCode,
    passed: !failed,
    failingTests: Array.from({ length: failed ? draw(0, 2) : 0 }, (_, test) => ({
      name: `test ${test} ${text(2)}`,
      ...(draw(0, 1) === 1 ? { file: 'test/cart.test.js' } : {}),
      output: text(3),
    })),
    output: text(),
    ...(exitCode === null ? { error: text(3) } : {}),
  };
}

/**
 * A random attempt of a code-agent step: checkpoint, one or two validation commands, a rollback when
 * a mandatory one failed, the attempt's end. For `randomJournals`' `extensionEvents`.
 */
export const codeAgentEvents: ExtensionEventGenerator = (context) => {
  const { draw, runId, stepId, attempt, revision, text } = context;
  const where: Where = { stepId, attempt, ...(revision === undefined ? {} : { revision }) };
  const validations = Array.from({ length: draw(1, 2) }, (_, index) => validationEnd(context, where, index));
  const rolledBack = validations.some((event) => !event.passed && !event.optional);
  const created = draw(0, 1) === 1 ? [`new ${text(1)}.js`] : [];
  const failed = draw(0, 3) === 3;
  return [
    {
      type: 'workspace-checkpoint',
      ...where,
      directory: `/tmp/checkpoints/${runId}/${stepId}.${attempt}`,
      entries: draw(0, 40),
      bytes: draw(0, 90_000),
      exclude: ['node_modules', '.git'],
    },
    ...validations,
    ...(rolledBack
      ? [{ type: 'workspace-rollback', ...where, restored: ['src/cart.js', text(1)], removed: created }]
      : []),
    {
      type: 'attempt-end',
      ...where,
      implementationRunId: `${runId}_implement_${stepId}_${attempt}`,
      status: failed ? 'failed' : 'succeeded',
      ...(failed ? { error: text(3) } : {}),
      changes: { created, modified: ['src/cart.js'], deleted: draw(0, 1) === 1 ? ['old.js'] : [] },
      rolledBack,
    },
  ];
};

/** Journals of a property test in which each view showed rows, by view. */
export type ViewCounts = Record<'attempts' | 'validations' | 'rollbacks', number>;

const iso = (value: Date | string) => new Date(value).toISOString();

/**
 * The code agent's views (`attempts`, `validations`, `rollbacks`), every column, against the run's
 * events of their types; `shown` counts the journals whose views had rows.
 */
export async function codeAgentViewDifferences(
  store: PostgresStore,
  runId: string,
  events: readonly RunEvent[],
  shown: ViewCounts,
): Promise<string[]> {
  // The views are not in the typed schema: plain SQL.
  const rows = async (view: string) => {
    const result = await sql<Record<string, unknown>>`select * from ${sql.table(`${store.schema}.${view}`)}
      where run_id = ${runId} order by seq`.execute(store.db);
    return result.rows.map((row) => ({ ...row, at: iso(row.at as Date) }));
  };
  const of = (type: string) => events.filter((event) => event.type === type) as unknown as Record<string, unknown>[];
  const common = (event: Record<string, unknown>) => ({
    run_id: runId,
    seq: event.seq,
    at: event.at,
    step_id: event.stepId,
    attempt: event.attempt,
  });
  const checks: [keyof ViewCounts, Record<string, unknown>[], unknown][] = [
    [
      'attempts',
      await rows('attempts'),
      of('attempt-end').map((event) => ({
        ...common(event),
        implementation_run_id: event.implementationRunId,
        status: event.status,
        error: event.error ?? null,
        rolled_back: event.rolledBack,
        changes: event.changes,
      })),
    ],
    [
      'validations',
      await rows('validations'),
      of('validation-end').map((event) => ({
        ...common(event),
        validation_run_id: event.validationRunId,
        command: event.command,
        exit_code: event.exitCode,
        passed: event.passed,
        failing_tests: event.failingTests,
        failing_count: (event.failingTests as unknown[]).length,
        output: event.output,
        error: event.error ?? null,
      })),
    ],
    [
      'rollbacks',
      await rows('rollbacks'),
      of('workspace-rollback').map((event) => ({ ...common(event), restored: event.restored, removed: event.removed })),
    ],
  ];
  return checks.flatMap(([view, actual, expected]) => {
    if (actual.length > 0) shown[view] += 1;
    const found = firstDifference(actual, expected);
    return found ? [`${view} ${found}`] : [];
  });
}
