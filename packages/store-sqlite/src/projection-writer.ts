import type { Artifact, Plan, RunEvent, Step } from '@stepwise/core';
import { exitCodeOf, type FoldChanges, type FoldedRun, type StepState } from '@stepwise/core/store';
import type Database from 'better-sqlite3';
import { json, scalar } from './bind-values.js';
import { type BlobWriter, NOTHING } from './blob-codec.js';
import { encodeOptionalTime, encodeTime } from './time-codec.js';

/** The run's own fields as a batch found them: the projections write the `runs` row only when one changed. */
export interface RunFields {
  readonly plan: FoldedRun['plan'];
  readonly authorization: FoldedRun['authorization'];
  readonly status: FoldedRun['status'];
  readonly finishedAt: FoldedRun['finishedAt'];
  readonly durationMs: FoldedRun['durationMs'];
  readonly usage: FoldedRun['usage'];
}

export function runFields(run: FoldedRun): RunFields {
  const { plan, authorization, status, finishedAt, durationMs, usage } = run;
  return { plan, authorization, status, finishedAt, durationMs, usage };
}

/** A plan's step positions by id (the first step with an id counts). */
function stepPositions(plan: Plan): Map<string, number> {
  const positions = new Map<string, number>();
  const steps = plan.steps;
  for (let position = 0; position < steps.length; position++) {
    const id = (steps[position] as Step).id;
    if (!positions.has(id)) positions.set(id, position);
  }
  return positions;
}

/**
 * The step positions of each kept fold's plan, built once per run and plan. Keyed by the fold, not
 * the plan object: a host may run the same plan object again after changing it (a step added, a
 * description edited), and the new run must not read the old plan's positions. Positions only, the
 * step read from `plan.steps`: an entry object per step cost 40 bytes a step for the run's life.
 */
const runPositions = new WeakMap<FoldedRun, { readonly plan: Plan; readonly positions: Map<string, number> }>();

function positionsOf(run: FoldedRun): ReadonlyMap<string, number> | undefined {
  const plan = run.plan;
  if (!plan) return undefined;
  const kept = runPositions.get(run);
  if (kept?.plan === plan) return kept.positions;
  const positions = stepPositions(plan);
  runPositions.set(run, { plan, positions });
  return positions;
}

/** The description of step `stepId` in the run's plan. */
function descriptionIn(run: FoldedRun, stepId: string): string | undefined {
  const position = positionsOf(run)?.get(stepId);
  return position === undefined ? undefined : run.plan?.steps[position]?.description;
}

/** The columns a step's own events change (see `updateStepState`). */
const STATE_COLUMNS = [
  'status',
  'attempt',
  'tool',
  'execution_id',
  'started_at',
  'ended_at',
  'duration_ms',
  'tool_called',
  'idempotent',
  'output',
  'output_sha256',
  'output_from_execution',
  'error',
] as const;

const STEP_COLUMNS = [...STATE_COLUMNS, 'description', 'usage'] as const;

/**
 * The step's output is its current execution's (the tool-result's): the row then keeps no copy.
 * Compared as JSON, which is what both rows would hold.
 */
function outputIsExecutions(run: FoldedRun, step: StepState, blobs: BlobWriter): boolean {
  const output = step.result?.output;
  if (output === undefined || step.executionId === undefined) return false;
  const execution = run.executions.get(step.executionId);
  if (execution?.resultSeq === undefined || execution.output === undefined) return false;
  return execution.output === output || blobs.textOf(execution.output) === blobs.textOf(output);
}

type ProjectionStatements = ReturnType<typeof prepareStatements>;

function prepareStatements(sqlite: Database.Database) {
  return {
    updateRunDefinition: sqlite.prepare(
      `update runs set plan_id = ?, plan_digest = ?, plan = ?, plan_sha256 = ?, engine = ?, goal = ?,
         authorization = ?, parent_run_id = ?, options = ?, created_at = ? where key = ?`,
    ),
    updateRunAuthorization: sqlite.prepare('update runs set authorization = ? where key = ?'),
    updateRunState: sqlite.prepare(
      'update runs set status = ?, finished_at = ?, duration_ms = ?, usage = ? where key = ?',
    ),
    deleteStep: sqlite.prepare('delete from steps where run_key = ? and step_id = ?'),
    // What a step's events change; its description (the plan's) and usage (model calls) change rarely.
    updateStepState: sqlite.prepare(
      `update steps set ${STATE_COLUMNS.map((column) => `${column} = ?`).join(', ')} where run_key = ? and step_id = ?`,
    ),
    // `first_seq` and `plan_index` say where the fold met the step (listSteps' order): set once.
    upsertStep: sqlite.prepare(
      `insert into steps (run_key, step_id, first_seq, plan_index, ${STEP_COLUMNS.join(', ')})
       values (?, ?, ?, ?, ${STEP_COLUMNS.map(() => '?').join(', ')})
       on conflict (run_key, step_id) do update set
         ${STEP_COLUMNS.map((column) => `${column} = excluded.${column}`).join(', ')}`,
    ),
    // The call's and result's fields are their events' (executions_view reads them): the row keeps the rest.
    upsertExecution: sqlite.prepare(
      `insert into executions (execution_id, run_key, step_id, args_sha256, call_seq, result_seq, exit_code, result,
         result_sha256)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (execution_id) do update set run_key = excluded.run_key, step_id = excluded.step_id,
         args_sha256 = excluded.args_sha256, call_seq = excluded.call_seq, result_seq = excluded.result_seq,
         exit_code = excluded.exit_code, result = excluded.result, result_sha256 = excluded.result_sha256`,
    ),
    // Only a row of this run: a call of another run since then owns the execution (as in MemoryStore).
    updateExecutionResult: sqlite.prepare(
      `update executions set result_seq = ?, exit_code = ?, result = ?, result_sha256 = ?
       where execution_id = ? and run_key = ?`,
    ),
    insertArtifact: sqlite.prepare(
      `insert into artifacts (execution_id, position, run_key, kind, name, media_type, truncated, size, content,
         content_sha256)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertApproval: sqlite.prepare(
      `insert into approvals (run_key, seq, execution_id, step_id, tool, decision, source, decided_by, reason, at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertModelCall: sqlite.prepare(
      `insert into model_calls (run_key, seq, step_id, turn, model, request, request_sha256, response, response_sha256,
         usage, latency_ms, error, at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
  };
}

/**
 * Writes what one batch changed, from core's fold of the run after the batch: the `runs` row when
 * its fields changed, each changed step and execution once, the batch's approvals and model calls.
 * Nothing here decides what an event means; `applyEvent` did, and `changes` says where.
 */
export class ProjectionWriter {
  readonly #statements: ProjectionStatements;
  readonly #blobs: BlobWriter;

  constructor(sqlite: Database.Database, blobs: BlobWriter) {
    this.#statements = prepareStatements(sqlite);
    this.#blobs = blobs;
  }

  write(runKey: number, run: FoldedRun, before: RunFields, changes: FoldChanges, events: readonly RunEvent[]): void {
    this.#writeRun(runKey, run, before);
    this.#writeSteps(runKey, run, before, changes, events);
    this.#writeExecutions(runKey, run, changes, (events[0] as RunEvent).seq);
    this.#writeDecisions(runKey, changes);
  }

  #writeRun(runKey: number, run: FoldedRun, before: RunFields): void {
    const statements = this.#statements;
    if (run.plan !== before.plan) {
      const plan = this.#blobs.json(run.plan);
      statements.updateRunDefinition.run(
        scalar(run.planId),
        scalar(run.planDigest),
        plan.text,
        plan.sha256,
        scalar(run.engine),
        scalar(run.goal),
        json(run.authorization),
        scalar(run.parentRunId),
        json(run.options),
        scalar(run.createdAt),
        runKey,
      );
    } else if (run.authorization !== before.authorization) {
      statements.updateRunAuthorization.run(json(run.authorization), runKey);
    }
    if (
      run.status !== before.status ||
      run.finishedAt !== before.finishedAt ||
      run.durationMs !== before.durationMs ||
      run.usage !== before.usage
    ) {
      statements.updateRunState.run(
        scalar(run.status),
        scalar(run.finishedAt),
        scalar(run.durationMs),
        json(run.usage),
        runKey,
      );
    }
  }

  #writeSteps(
    runKey: number,
    run: FoldedRun,
    before: RunFields,
    changes: FoldChanges,
    events: readonly RunEvent[],
  ): void {
    for (const stepId of changes.removedSteps) this.#statements.deleteStep.run(runKey, stepId);
    const plan = positionsOf(run);
    const written = changes.steps;
    if (run.plan !== before.plan && before.plan) {
      // Steps the new plan no longer has lose their description.
      for (const step of before.plan.steps) {
        if (!plan?.has(step.id) && run.steps.has(step.id)) written.add(step.id);
      }
    }
    const firstSeq = (events[0] as RunEvent).seq;
    // Every column when the plan (descriptions) changed, or a model call (usage) of the step was journaled.
    const planChanged = run.plan !== before.plan;
    const modelCalls =
      changes.modelCalls.length === 0 ? undefined : new Set(changes.modelCalls.map((call) => call.stepId));
    // A plan of the batch other than the run's current one (a revision the batch revised again).
    let other: { readonly plan: Plan; readonly positions: ReadonlyMap<string, number> } | undefined;
    const positionIn = (creator: Plan | undefined, stepId: string): number | undefined => {
      if (creator === undefined) return undefined;
      if (creator === run.plan) return plan?.get(stepId);
      if (other?.plan !== creator) other = { plan: creator, positions: stepPositions(creator) };
      return other.positions.get(stepId);
    };
    for (const stepId of written) {
      const createdAt = changes.createdSteps.get(stepId);
      // A planned step's place is its index in the plan that added it (run-start or a revision).
      const creator = createdAt === undefined ? undefined : (events[createdAt - firstSeq] as { plan?: Plan });
      const place = { createdAt, index: positionIn(creator?.plan, stepId) };
      this.#writeStep(runKey, run, stepId, place, planChanged || modelCalls?.has(stepId) === true);
    }
  }

  /**
   * One step's row. A step the run had before the batch has its row: an update of the columns its
   * events change finds it; `full` (the plan or the step's usage changed): every column is written.
   */
  #writeStep(
    runKey: number,
    run: FoldedRun,
    stepId: string,
    place: { readonly createdAt: number | undefined; readonly index: number | undefined },
    full: boolean,
  ): void {
    const step = run.steps.get(stepId);
    if (!step) return;
    const result = step.result;
    const fromExecution = outputIsExecutions(run, step, this.#blobs);
    const output = fromExecution ? NOTHING : this.#blobs.json(result?.output);
    const tool = scalar(step.tool);
    const executionId = scalar(step.executionId);
    const startedAt = encodeOptionalTime(scalar(step.startedAt));
    const endedAt = step.endedAt === undefined ? null : encodeTime(step.endedAt);
    const durationMs = scalar(result?.durationMs);
    const toolCalled = step.toolCalled ? 1 : 0;
    const idempotent = scalar(step.idempotent);
    const error = json(result?.error);
    const statements = this.#statements;
    if (place.createdAt === undefined && !full) {
      const updated = statements.updateStepState.run(
        step.status,
        step.attempt,
        tool,
        executionId,
        startedAt,
        endedAt,
        durationMs,
        toolCalled,
        idempotent,
        output.text,
        output.sha256,
        fromExecution ? 1 : 0,
        error,
        runKey,
        stepId,
      ).changes;
      if (updated > 0) return;
    }
    statements.upsertStep.run(
      runKey,
      stepId,
      place.createdAt ?? run.lastSeq,
      place.index ?? null,
      step.status,
      step.attempt,
      tool,
      executionId,
      startedAt,
      endedAt,
      durationMs,
      toolCalled,
      idempotent,
      output.text,
      output.sha256,
      fromExecution ? 1 : 0,
      error,
      scalar(descriptionIn(run, stepId)),
      json(step.usage),
    );
  }

  #writeExecutions(runKey: number, run: FoldedRun, changes: FoldChanges, firstSeq: number): void {
    for (const executionId of changes.executions) {
      const execution = run.executions.get(executionId);
      if (!execution) continue;
      // The tool-result event holds an inline output: the row keeps only a large one's blob.
      const result = this.#blobs.output(execution.output);
      const resultSeq = execution.resultSeq ?? null;
      const exitCode = scalar(exitCodeOf(execution.output, execution.error));
      if (execution.callSeq >= firstSeq) {
        // Large arguments are a blob the tool-call event refers to as well: the row names it for SQL.
        const args = this.#blobs.json(execution.args);
        this.#statements.upsertExecution.run(
          executionId,
          runKey,
          execution.stepId,
          args.sha256,
          execution.callSeq,
          resultSeq,
          exitCode,
          null,
          result.sha256,
        );
        if (execution.resultSeq !== undefined) this.#writeArtifacts(runKey, executionId, execution.artifacts);
        continue;
      }
      const changed = this.#statements.updateExecutionResult.run(
        resultSeq,
        exitCode,
        null,
        result.sha256,
        executionId,
        runKey,
      ).changes;
      if (changed > 0) this.#writeArtifacts(runKey, executionId, execution.artifacts);
    }
  }

  #writeArtifacts(runKey: number, executionId: string, artifacts: readonly Artifact[]): void {
    artifacts.forEach((artifact, position) => {
      const content = typeof artifact.content === 'string' ? artifact.content : (json(artifact.content) ?? '');
      const stored = this.#blobs.text(content);
      this.#statements.insertArtifact.run(
        executionId,
        position,
        runKey,
        scalar(artifact.kind),
        scalar(artifact.name),
        scalar(artifact.mediaType),
        scalar(artifact.truncated),
        Buffer.byteLength(content, 'utf8'),
        stored.text,
        stored.sha256,
      );
    });
  }

  #writeDecisions(runKey: number, changes: FoldChanges): void {
    for (const event of changes.approvals) {
      this.#statements.insertApproval.run(
        runKey,
        event.seq,
        event.executionId,
        event.stepId,
        scalar(event.tool),
        scalar(event.decision),
        scalar(event.source),
        scalar(event.by),
        scalar(event.reason),
        encodeTime(event.at),
      );
    }
    for (const event of changes.modelCalls) {
      const request = this.#blobs.json(event.request);
      const response = this.#blobs.json(event.response);
      this.#statements.insertModelCall.run(
        runKey,
        event.seq,
        event.stepId,
        scalar(event.turn),
        scalar(event.model),
        request.text,
        request.sha256,
        response.text,
        response.sha256,
        json(event.usage),
        scalar(event.latencyMs),
        json(event.error),
        encodeTime(event.at),
      );
    }
  }
}
