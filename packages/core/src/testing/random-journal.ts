import type { RunEvent, RunEventInput, RunStatus, StepStatus } from '../journal/events.js';
import { JOURNAL_VERSION } from '../journal/journal-version.js';
import { deriveExecutionId, type PlanAuthorization, planDigest } from '../plan/plan-digest.js';
import type { Plan, Step } from '../plan/plan-schema.js';
import { afterEnd, endRun, resumeRun, revisePlan } from './random-run-events.js';
import { goalTurn, miscEvent } from './random-step-events.js';
import {
  chance,
  type Draw,
  pick,
  randomArtifacts,
  randomError,
  randomText,
  randomUsage,
  randomValue,
} from './random-values.js';

/** One generated run: its journal, and the batches (sizes, in order) a store is given it in. */
export interface GeneratedJournal {
  readonly runId: string;
  readonly events: readonly RunEvent[];
  readonly batches: readonly number[];
}

export interface RandomJournalOptions {
  /** Run ids start with it: give each call its own when one store takes many cases. Default `run`. */
  readonly prefix?: string;
  /** Every run's plan has this id (`listRuns({ planId })` finds the case's runs). Default `plan`. */
  readonly planId?: string;
  /** At most this many runs. Default 3. */
  readonly maxRuns?: number;
  /** At most this many moves per run (a move journals one to four events). Default 40. */
  readonly maxMoves?: number;
}

/** Where a step of the simulated run is: not running, or how far its current attempt got. */
type Phase = 'idle' | 'started' | 'requested' | 'called' | 'resulted';

export interface SimulatedStep {
  readonly id: string;
  tool: string | undefined;
  attempt: number;
  phase: Phase;
  /** The attempt's execution (the step's) and the current tool call's (a goal step's calls have their own). */
  executionId: string;
  callId: string;
  turn: number;
  startedAt: string;
}

export const STEP_IDS = ['a', 'b', 'c', 'd', 'e', 'f'];
const TOOLS = ['echo', 'note', 'read_file', undefined];

/**
 * A run as an engine would journal it, one random move at a time: steps start, ask for approval,
 * call tools, end, retry; goal steps talk to a model; the plan is revised; the run ends, continues,
 * resumes after a crash. Every journal folds without error (`foldRun`): the plan revisions chain.
 */
export class JournalSimulation {
  readonly events: RunEvent[] = [];
  readonly steps = new Map<string, SimulatedStep>();
  plan: Plan;
  digest: string;
  ended: RunStatus | undefined;
  /** Approval requests and questions that wait for a person's answer, by request id. */
  readonly waiting = new Map<string, { stepId: string; question: boolean }>();
  #time: number;

  constructor(
    readonly draw: Draw,
    readonly runId: string,
    planId: string,
    startTime: number,
  ) {
    this.#time = startTime;
    this.plan = { id: planId, goal: randomText(draw, 3), steps: this.#randomSteps(draw(1, 4)) };
    this.digest = planDigest(this.plan);
  }

  now(): string {
    return new Date(this.#time).toISOString();
  }

  emit(input: RunEventInput): RunEvent {
    // Events of one batch often share a millisecond, as the journal stamps them.
    this.#time += this.draw(0, 1) * this.draw(1, 2000);
    const event = { ...input, runId: this.runId, seq: this.events.length + 1, at: this.now() } as RunEvent;
    this.events.push(event);
    return event;
  }

  #randomSteps(count: number): Step[] {
    const ids = STEP_IDS.filter(() => chance(this.draw, 60)).slice(0, count);
    if (ids.length === 0) ids.push(pick(this.draw, STEP_IDS));
    return ids.map((id) => this.randomStep(id));
  }

  randomStep(id: string): Step {
    const tool = pick(this.draw, TOOLS);
    return {
      id,
      ...(tool ? { tool, args: { value: randomValue(this.draw) } } : {}),
      ...(chance(this.draw, 50) ? { description: randomText(this.draw, 3) } : {}),
    };
  }

  authorization(): PlanAuthorization {
    return { id: `auth_${this.draw(0, 9)}`, planId: this.plan.id, planDigest: this.digest, by: 'ops', at: this.now() };
  }

  start(): void {
    this.emit({
      type: 'run-start',
      ...(chance(this.draw, 50) ? { journalVersion: JOURNAL_VERSION } : {}),
      planId: this.plan.id,
      planDigest: this.digest,
      plan: this.plan,
      engine: pick(this.draw, ['dag', 'agentic', 'sequential', 'solve']),
      ...(chance(this.draw, 20) ? { authorization: this.authorization() } : {}),
      ...(chance(this.draw, 10) ? { parentRunId: `${this.runId}_parent` } : {}),
      ...(chance(this.draw, 30) ? { options: { concurrency: this.draw(1, 8) } } : {}),
    });
    for (const step of this.plan.steps) this.simulated(step.id, step.tool);
  }

  simulated(id: string, tool: string | undefined): SimulatedStep {
    let step = this.steps.get(id);
    if (!step) {
      step = { id, tool, attempt: 0, phase: 'idle', executionId: '', callId: '', turn: 0, startedAt: '' };
      this.steps.set(id, step);
    }
    return step;
  }

  /** One move: what a running run does next, or what happens to an ended one. */
  move(): void {
    if (this.ended !== undefined) {
      afterEnd(this);
      return;
    }
    const running = [...this.steps.values()].filter((step) => step.phase !== 'idle');
    const roll = this.draw(0, 99);
    if (roll < 40 && running.length > 0) this.#advance(pick(this.draw, running));
    else if (roll < 70) this.#startStep();
    else if (roll < 80) miscEvent(this, pick(this.draw, [...this.steps.values()]));
    else if (roll < 86) revisePlan(this);
    else if (roll < 90) resumeRun(this);
    else if (roll < 95 && running.length > 0) this.#advance(pick(this.draw, running));
    else endRun(this);
  }

  #startStep(): void {
    const id = chance(this.draw, 5) ? 'unplanned' : pick(this.draw, [...this.steps.keys()]);
    const step = this.simulated(id, undefined);
    step.attempt += 1;
    step.phase = 'started';
    step.turn = 0;
    step.startedAt = this.now();
    step.executionId = chance(this.draw, 5)
      ? `ex_shared_${this.draw(0, 1)}`
      : deriveExecutionId(this.runId, step.id, step.attempt);
    step.callId = step.executionId;
    this.emit({
      type: 'step-start',
      stepId: id,
      tool: step.tool,
      attempt: step.attempt,
      executionId: step.executionId,
    });
  }

  #advance(step: SimulatedStep): void {
    switch (step.phase) {
      case 'started':
        if (step.tool === undefined) goalTurn(this, step);
        else if (chance(this.draw, 25)) this.#requestApproval(step);
        else if (chance(this.draw, 80)) this.callTool(step);
        else this.endStep(step, pick(this.draw, ['skipped', 'cancelled', 'denied', 'failed']));
        break;
      case 'requested':
        this.#decide(step);
        break;
      case 'called':
        if (chance(this.draw, 15)) miscEvent(this, step);
        else this.#toolResult(step);
        break;
      default:
        this.endStep(step, chance(this.draw, 70) ? 'succeeded' : 'failed');
        if (chance(this.draw, 30)) this.#retry(step);
    }
  }

  #requestApproval(step: SimulatedStep): void {
    step.phase = 'requested';
    this.emit({
      type: 'approval-request',
      stepId: step.id,
      executionId: step.executionId,
      tool: step.tool ?? 'echo',
      effect: 'write',
      args: { value: randomValue(this.draw) },
      reason: pick(this.draw, ['step', 'policy']),
    });
  }

  #decide(step: SimulatedStep): void {
    if (chance(this.draw, 20)) {
      // `pause`: the step ends waiting; a person answers after the run ended.
      this.waiting.set(step.executionId, { stepId: step.id, question: false });
      this.endStep(step, 'waiting');
      return;
    }
    const decision = pick(this.draw, ['approved', 'denied', 'skipped'] as const);
    this.emit({
      type: 'approval-decision',
      stepId: step.id,
      executionId: step.executionId,
      tool: step.tool ?? 'echo',
      decision,
      source: pick(this.draw, ['handler', 'policy', 'fallback']),
      ...(chance(this.draw, 50) ? { by: 'reviewer', reason: randomText(this.draw, 3) } : {}),
    });
    if (decision === 'approved') this.callTool(step);
    else this.endStep(step, decision === 'denied' ? 'denied' : 'skipped');
  }

  callTool(step: SimulatedStep, turn?: number): void {
    step.phase = 'called';
    this.emit({
      type: 'tool-call',
      stepId: step.id,
      executionId: step.callId,
      attempt: step.attempt,
      tool: step.tool ?? 'echo',
      effect: pick(this.draw, ['read', 'write', 'exec']),
      idempotent: chance(this.draw, 50),
      args: { value: randomValue(this.draw) },
      ...(turn === undefined ? {} : { turn, toolCallId: `call_${turn}` }),
    });
  }

  #toolResult(step: SimulatedStep): void {
    const status = pick(this.draw, ['succeeded', 'succeeded', 'failed', 'cancelled'] as const);
    const artifacts = randomArtifacts(this.draw);
    this.emit({
      type: 'tool-result',
      stepId: step.id,
      executionId: step.callId,
      tool: step.tool ?? 'echo',
      status,
      ...(status === 'succeeded' ? { output: this.#output() } : { error: randomError(this.draw) }),
      ...(artifacts ? { artifacts } : {}),
      startedAt: step.startedAt,
      durationMs: this.draw(0, 5000) / 7,
    });
    // A goal step's call returns to its model loop; a tool step's result ends the attempt next.
    step.phase = step.tool === undefined ? 'started' : 'resulted';
    // Now and then the same result twice (a replayed flush): the fold keeps the last.
    if (chance(this.draw, 3)) this.emit({ ...(this.events.at(-1) as RunEventInput) });
  }

  #output(): unknown {
    return chance(this.draw, 20)
      ? { exitCode: this.draw(0, 2), value: randomValue(this.draw) }
      : randomValue(this.draw);
  }

  endStep(step: SimulatedStep, status: StepStatus): void {
    step.phase = 'idle';
    const failed = status !== 'succeeded';
    const artifacts = randomArtifacts(this.draw);
    const usage = randomUsage(this.draw);
    this.emit({
      type: 'step-end',
      stepId: step.id,
      result: {
        stepId: step.id,
        tool: step.tool,
        status,
        ...(status === 'succeeded' && chance(this.draw, 80) ? { output: this.#output() } : {}),
        ...(failed && chance(this.draw, 80) ? { error: randomError(this.draw) } : {}),
        executionId: step.executionId,
        attempt: step.attempt,
        startedAt: step.startedAt || this.now(),
        durationMs: this.draw(0, 9000) / 3,
        ...(artifacts ? { artifacts } : {}),
        ...(usage && step.tool === undefined ? { usage } : {}),
      },
    });
  }

  #retry(step: SimulatedStep): void {
    this.emit({
      type: 'step-retry',
      stepId: step.id,
      attempt: step.attempt,
      nextAttempt: step.attempt + 1,
      delayMs: this.draw(0, 1000),
      error: randomError(this.draw),
    });
  }
}

/**
 * Random journals: one to `maxRuns` runs, each a valid journal (it folds) of an engine's moves,
 * split into random batches. Feed them to a store with `checkStoreAgainstFold`.
 */
export function randomJournals(draw: Draw, options: RandomJournalOptions = {}): GeneratedJournal[] {
  const prefix = options.prefix ?? 'run';
  const runs = draw(1, options.maxRuns ?? 3);
  const journals: GeneratedJournal[] = [];
  for (let index = 0; index < runs; index++) {
    // Runs created in the same millisecond list in the order they were first written.
    const startTime = Date.UTC(2030, 0, 1) + draw(0, 3) * 60_000;
    const simulation = new JournalSimulation(draw, `${prefix}_${index}`, options.planId ?? 'plan', startTime);
    simulation.start();
    const moves = draw(0, options.maxMoves ?? 40);
    for (let move = 0; move < moves; move++) simulation.move();
    const batches: number[] = [];
    for (let left = simulation.events.length; left > 0; ) {
      const size = Math.min(left, draw(1, 6));
      batches.push(size);
      left -= size;
    }
    journals.push({ runId: simulation.runId, events: simulation.events, batches });
  }
  return journals;
}
