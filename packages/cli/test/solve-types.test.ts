import { fileURLToPath } from 'node:url';
import type * as CodeAgent from '@stepwise/code-agent';
import { SOLVE_ENGINE } from '@stepwise/code-agent';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { CODE_AGENT_ENGINE } from '../src/commands/solve-command.js';
import {
  type PlanTaskOptions,
  planTask,
  type ResumeSolveOptions,
  resumeSolve,
  type SolveAttempt,
  type SolveEvent,
  type SolveModel,
  type SolveOptions,
  type SolveResult,
  solve,
} from '../src/index.js';

// The cli declares the deprecated solve()'s types field by field (its declaration files must load
// without @stepwise/code-agent). Each pair below must have the same fields and be assignable both
// ways: a field added, dropped, renamed or retyped on either side, at any level the cli declares
// itself, fails `tsc` on this file, which the test below runs.

/** `true` only when A and B are assignable to each other. */
type Both<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/**
 * Assignable both ways with the same field names (an optional field renamed on one side is assignable
 * still); an optional field's type is compared without its `undefined`.
 */
type Same<A, B> =
  Both<NonNullable<A>, NonNullable<B>> extends true ? Both<keyof NonNullable<A>, keyof NonNullable<B>> : false;
type EventOf<Union, Type> = Extract<Union, { readonly type: Type }>;
type Validation<Attempt extends { readonly validations: readonly unknown[] }> = Attempt['validations'][number];

export const SAME_TYPES: readonly true[] = [
  true satisfies Same<SolveOptions, CodeAgent.SolveOptions>,
  true satisfies Same<ResumeSolveOptions, CodeAgent.ResumeSolveOptions>,
  true satisfies Same<PlanTaskOptions, CodeAgent.PlanTaskOptions>,
  true satisfies Same<SolveOptions['limits'], CodeAgent.SolveOptions['limits']>,
  true satisfies Same<SolveOptions['checkpoint'], CodeAgent.SolveCheckpointOptions>,
  true satisfies Same<SolveModel, CodeAgent.SolveModel>,
  true satisfies Same<SolveResult, CodeAgent.SolveResult>,
  true satisfies Same<SolveResult['steps'][number], CodeAgent.SolveStepSummary>,
  true satisfies Same<SolveResult['revisions'][number], CodeAgent.SolveResult['revisions'][number]>,
  true satisfies Same<SolveAttempt, CodeAgent.SolveAttempt>,
  true satisfies Same<SolveAttempt['changes'], CodeAgent.WorkspaceChangeList>,
  true satisfies Same<SolveAttempt['rollback'], CodeAgent.SolveAttempt['rollback']>,
  true satisfies Same<Validation<SolveAttempt>, Validation<CodeAgent.SolveAttempt>>,
  true satisfies Same<
    Validation<SolveAttempt>['failingTests'][number],
    Validation<CodeAgent.SolveAttempt>['failingTests'][number]
  >,
  true satisfies Same<SolveEvent, CodeAgent.SolveEvent>,
  true satisfies Both<SolveEvent['type'], CodeAgent.SolveEvent['type']>,
  true satisfies Same<EventOf<SolveEvent, 'plan-ready'>, EventOf<CodeAgent.SolveEvent, 'plan-ready'>>,
  true satisfies Same<EventOf<SolveEvent, 'attempt-start'>, EventOf<CodeAgent.SolveEvent, 'attempt-start'>>,
  true satisfies Same<EventOf<SolveEvent, 'attempt-end'>, EventOf<CodeAgent.SolveEvent, 'attempt-end'>>,
  true satisfies Same<EventOf<SolveEvent, 'plan-revised'>, EventOf<CodeAgent.SolveEvent, 'plan-revised'>>,
];

/** How a caller uses the deprecated functions under --strict; never called. */
export async function usesTheCliTypes(model: SolveModel, store: CodeAgent.ResumeSolveOptions['store']) {
  const result = await solve({
    task: 'fix it',
    workspace: '.',
    validate: ['npm', 'test'],
    model,
    limits: { maxTurns: 3 },
    // Typed by the options: no implicit any under --strict.
    onProgress(event) {
      if (event.type === 'attempt-end') void event.attempt.validations.map((each) => each.failingTests.length);
    },
  });
  void [result.attempts[0]?.rolledBack, result.steps[0]?.status, result.revisions.length];
  // @ts-expect-error a misspelt option is an error, not passed on
  await solve({ task: 'fix it', workspace: '.', validate: ['npm', 'test'], model, maxAtempts: 3 });
  // @ts-expect-error `retry` lists step ids
  await resumeSolve({ runId: 'run', store, workspace: '.', model, retry: 'fix' });
  // @ts-expect-error `validate` is an argv or named commands
  await planTask({ task: 'fix it', workspace: '.', model, validate: 42 });
  // @ts-expect-error limits of the agentic engine's ask policy are not the code agent's
  await solve({ task: 'fix it', workspace: '.', validate: ['npm', 'test'], model, limits: { onBlocked: 'ask' } });
}

describe("the cli's deprecated solve() types", () => {
  it("are the code agent's, both ways, and reject what it would reject (tsc --strict on this file)", () => {
    const file = fileURLToPath(import.meta.url);
    const config = ts.getParsedCommandLineOfConfigFile(
      fileURLToPath(new URL('../tsconfig.json', import.meta.url)),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => expect.fail(String(diagnostic.messageText)) },
    );
    const program = ts.createProgram([file], { ...config?.options, noEmit: true });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    expect(problems).toEqual([]);
  }, 120_000);

  it("name a code-agent run's engine as the code agent journals it", () => {
    expect(CODE_AGENT_ENGINE).toBe(SOLVE_ENGINE);
  });
});
