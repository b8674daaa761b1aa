import { ErrorCodes } from '../errors.js';
import { answerAncestorQueries } from './ancestor-queries.js';
import type { DependencyIndex, StepShape, TopologicalOrder } from './dependency-index.js';
import { findReferences, type Reference, walkReferences } from './references.js';
import type { AddProblem } from './validate-plan.js';

/** What the first pass over the references learnt, in index form: no strings, no paths. */
export interface ReferenceVerdicts {
  /** Ancestry answers (1: the target is a transitive dependency); slot s owns `queryStart[s] .. queryStart[s + 1] - 1`. */
  readonly answers: Uint8Array;
  readonly queryStart: Int32Array;
  /** 1 when the step has a reference with a problem that needs no ancestry (forbidden, unknown step). */
  readonly flagged: Uint8Array;
}

type ProblemWithoutAncestry = 'reference-forbidden' | 'reference-unknown-step';

/**
 * First pass: the step each reference names, its ancestry answered for all references at once
 * (`answerAncestorQueries`). Paths are left for the references that turn out to have a problem:
 * one path string per reference, as long as the reference is deep, added up to hundreds of
 * megabytes on plans with deeply nested references.
 */
export function judgeReferences(index: DependencyIndex, sorted: TopologicalOrder, engine: string): ReferenceVerdicts {
  const { steps, slotById } = index;
  const acyclic = sorted.order !== undefined;
  const sources: number[] = [];
  const targets: number[] = [];
  const queryStart = new Int32Array(steps.length + 1);
  const flagged = new Uint8Array(steps.length);
  let slot = 0;
  // One visitor for every step (not a closure per step); `slot` says whose references these are.
  const visit = (stepId: string, _pointer: string, form: Reference['form']): void => {
    const target = slotById.get(stepId);
    if (asksAncestry(engine, target, acyclic)) {
      sources.push(slot);
      targets.push(target);
    } else if (problemWithoutAncestry(form, target, engine)) {
      flagged[slot] = 1;
    }
  };
  for (; slot < steps.length; slot++) {
    const args = (steps[slot] as StepShape).args;
    if (typeof args === 'object' && args !== null && !Array.isArray(args)) walkReferences(args, visit);
    queryStart[slot + 1] = sources.length;
  }
  const answers =
    sources.length > 0 && sorted.order
      ? answerAncestorQueries({ ...sorted, order: sorted.order, dependencies: index.dependencies }, sources, targets)
      : new Uint8Array(0);
  return { answers, queryStart, flagged };
}

/** Second pass, for one step: its reference problems, in document order (paths built only here). */
export function reportReferenceProblems(
  index: DependencyIndex,
  slot: number,
  verdicts: ReferenceVerdicts,
  engine: string,
  acyclic: boolean,
  add: AddProblem,
): void {
  const { answers, queryStart, flagged } = verdicts;
  let query = queryStart[slot] as number;
  const end = queryStart[slot + 1] as number;
  if (flagged[slot] === 0 && answers.subarray(query, end).indexOf(0) === -1) return;
  const step = index.steps[slot] as StepShape;
  for (const reference of findReferences(step.args)) {
    const target = index.slotById.get(reference.stepId);
    const path = `/steps/${step.index}/args${reference.path}`;
    if (!asksAncestry(engine, target, acyclic)) {
      const kind = problemWithoutAncestry(reference.form, target, engine);
      if (kind) add(ErrorCodes.PLAN_INVALID, kind, path, messageWithoutAncestry(kind, reference));
    } else if (answers[query++] === 0) {
      add(
        ErrorCodes.PLAN_INVALID,
        'reference-not-dependency',
        path,
        `step "${step.id}" uses the output of "${reference.stepId}" but does not depend on it (add it to dependsOn)`,
      );
    }
  }
}

/** Does a reference need the ancestry answer? Only on permissive engines, in acyclic plans, to a known step. */
function asksAncestry(engine: string, target: number | undefined, acyclic: boolean): target is number {
  return engine !== 'sequential' && target !== undefined && acyclic;
}

/** The reference problems that need no ancestry: forbidden (strict engine) and unknown step. */
function problemWithoutAncestry(
  form: Reference['form'],
  target: number | undefined,
  engine: string,
): ProblemWithoutAncestry | undefined {
  // Strict passes arguments as written; a "$word" that names no step is just text.
  if (engine === 'sequential') return form === 'object' || target !== undefined ? 'reference-forbidden' : undefined;
  // A known step in a cyclic plan: the cycle is reported already, and ancestry is not defined there.
  return target === undefined ? 'reference-unknown-step' : undefined;
}

function messageWithoutAncestry(kind: ProblemWithoutAncestry, reference: Reference): string {
  if (kind === 'reference-forbidden') {
    return `the sequential engine passes arguments exactly as written; remove the reference to "${reference.stepId}"`;
  }
  return reference.form === 'string'
    ? `"$${reference.stepId}" references no step; write "$$${reference.stepId}" for a literal dollar`
    : `reference to unknown step "${reference.stepId}"`;
}
