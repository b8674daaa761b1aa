import { ErrorCodes } from '../errors.js';
import { answerAncestorQueries } from './ancestor-queries.js';
import { type DependencyIndex, idOf, planIndexOf, type TopologicalOrder } from './dependency-index.js';
import { IntList } from './int-list.js';
import { ARGS_NESTING_DEPTH, deeper } from './nesting-depth.js';
import { findReferences, type Reference, type ReferenceVisitor, walkReferences } from './references.js';
import type { SpareInts } from './spare-ints.js';
import { IdLookups } from './step-id-table.js';
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

/** References whose ids are looked up at once (see `StepIdTable.slotsOf`). */
const LOOKUP_BATCH = 256;

/**
 * First pass, fed one step at a time (`collect`, in slot order) by the pass that checks tools and
 * arguments, so the plan is walked once for all three: the step each reference names; then
 * `judge` answers their ancestry all at once (`answerAncestorQueries`).
 * Paths are left for the references that turn out to have a problem: one path string per
 * reference, as long as the reference is deep, added up to hundreds of megabytes on plans with
 * deeply nested references.
 */
export class ReferenceJudge {
  private readonly sources: IntList;
  private readonly targets: IntList;
  private readonly queryStart: Int32Array;
  private readonly flagged: Uint8Array;
  private readonly acyclic: boolean;
  private slot = 0;
  /** The ids the references of the last steps name, looked up together (see `StepIdTable.slotsOf`). */
  private readonly lookups = new IdLookups(LOOKUP_BATCH);
  /** For each of them, the slot of the step it is in, and 1 for the object form. */
  private readonly lookupSources = new IntList(LOOKUP_BATCH);
  private readonly lookupForms = new IntList(LOOKUP_BATCH);
  /** Steps collected, and steps whose queries are all in `sources` (`queryStart` set). */
  private collected = 0;
  private closed = 0;

  /** `spare`: arrays to write into rather than allocate (see `SpareInts`). */
  constructor(
    private readonly index: DependencyIndex,
    private readonly sorted: TopologicalOrder,
    private readonly engine: string,
    spare: SpareInts,
  ) {
    const count = index.raw.length;
    this.sources = new IntList(count, spare);
    this.targets = new IntList(count, spare);
    this.queryStart = spare.take(count + 1);
    this.flagged = new Uint8Array(count);
    this.acyclic = sorted.acyclic;
  }

  /**
   * The references in one step's `args`; steps come in slot order. False when the args nest more
   * than ARGS_NESTING_DEPTH levels (the walk stops there, and validation reports it alone).
   */
  collect(slot: number, args: unknown): boolean {
    this.slot = slot;
    let within = true;
    // Args that are an array are the schema's problem, and no place for references.
    if (Array.isArray(args)) within = !deeper(args, ARGS_NESTING_DEPTH);
    else if (typeof args === 'object' && args !== null)
      within = walkReferences(args, this.visit, false, ARGS_NESTING_DEPTH);
    this.collected = slot + 1;
    return within;
  }

  // One visitor for every step (not a closure per step); `slot` says whose references these are.
  private readonly visit: ReferenceVisitor = (text, from, to, form) => {
    this.lookups.add(text, from, to);
    this.lookupSources.push(this.slot);
    this.lookupForms.push(form === 'object' ? 1 : 0);
    // Settled as soon as the batch is full, within a step too (a join step may hold 100,000 references).
    if (this.lookups.length === LOOKUP_BATCH) this.settleLookups();
  };

  /** After the last `collect`, while the step-id table still has its arrays (see `StepIdTable.release`). */
  finishCollecting(): void {
    this.settleLookups();
  }

  /** Looks up the batch's ids and files each reference: an ancestry query, a flag, or nothing. */
  private settleLookups(): void {
    const { lookups, lookupSources, lookupForms, sources, targets } = this;
    if (lookups.length > 0) this.index.slotById.slotsOf(lookups);
    for (let entry = 0; entry < lookups.length; entry++) {
      const source = lookupSources.at(entry);
      this.closeSlotsBefore(source);
      const target = lookups.slots[entry] as number;
      if (asksAncestry(this.engine, target, this.acyclic)) {
        sources.push(source);
        targets.push(target);
      } else if (problemWithoutAncestry(lookupForms.at(entry) === 1 ? 'object' : 'string', target, this.engine)) {
        this.flagged[source] = 1;
      }
    }
    this.closeSlotsBefore(this.collected);
    lookups.clear();
    lookupSources.length = 0;
    lookupForms.length = 0;
  }

  /** Every step before `slot` has its queries in `sources`: their ranges are known. */
  private closeSlotsBefore(slot: number): void {
    for (; this.closed < slot; this.closed++) this.queryStart[this.closed + 1] = this.sources.length;
  }

  /** Answers the ancestry of every reference collected (`finishCollecting` first); `spare` arrays are written over. */
  judge(spare: SpareInts): ReferenceVerdicts {
    this.settleLookups();
    const { sources, targets, sorted } = this;
    const answers =
      sources.length > 0 && sorted.acyclic
        ? answerAncestorQueries(
            { position: sorted.position, dependencies: this.index.dependencies },
            sources.view(),
            targets.view(),
            undefined,
            undefined,
            spare,
          )
        : new Uint8Array(0);
    return { answers, queryStart: this.queryStart, flagged: this.flagged };
  }
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
  let clean = flagged[slot] === 0;
  for (let answer = query; clean && answer < end; answer++) clean = answers[answer] === 1;
  if (clean) return;
  const id = idOf(index, slot);
  for (const reference of findReferences((index.raw[slot] as Record<string, unknown>).args)) {
    const target = index.slotById.slotOf(reference.stepId);
    const path = `/steps/${planIndexOf(index, slot)}/args${reference.path}`;
    if (!asksAncestry(engine, target, acyclic)) {
      const kind = problemWithoutAncestry(reference.form, target, engine);
      if (kind) add(ErrorCodes.PLAN_INVALID, kind, path, messageWithoutAncestry(kind, reference));
    } else if (answers[query++] === 0) {
      add(
        ErrorCodes.PLAN_INVALID,
        'reference-not-dependency',
        path,
        `step "${id}" uses the output of "${reference.stepId}" but does not depend on it (add it to dependsOn)`,
      );
    }
  }
}

/** Does a reference need the ancestry answer? Only on permissive engines, in acyclic plans, to a known step. */
function asksAncestry(engine: string, target: number, acyclic: boolean): boolean {
  return engine !== 'sequential' && target !== -1 && acyclic;
}

/** The reference problems that need no ancestry: forbidden (strict engine) and unknown step. */
function problemWithoutAncestry(
  form: Reference['form'],
  target: number,
  engine: string,
): ProblemWithoutAncestry | undefined {
  // Strict passes arguments as written; a "$word" that names no step is just text.
  if (engine === 'sequential') return form === 'object' || target !== -1 ? 'reference-forbidden' : undefined;
  // A known step in a cyclic plan: the cycle is reported already, and ancestry is not defined there.
  return target === -1 ? 'reference-unknown-step' : undefined;
}

function messageWithoutAncestry(kind: ProblemWithoutAncestry, reference: Reference): string {
  if (kind === 'reference-forbidden') {
    return `the sequential engine passes arguments exactly as written; remove the reference to "${reference.stepId}"`;
  }
  return reference.form === 'string'
    ? `"$${reference.stepId}" references no step; write "$$${reference.stepId}" for a literal dollar`
    : `reference to unknown step "${reference.stepId}"`;
}
