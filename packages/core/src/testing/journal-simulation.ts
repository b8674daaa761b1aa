import type { RunEvent, RunEventInput, RunStatus, StepStatus } from '../journal/events.js';
import { JOURNAL_VERSION } from '../journal/journal-version.js';
import { deriveExecutionId, type PlanAuthorization, planDigest } from '../plan/plan-digest.js';
import type { Plan, Step } from '../plan/plan-schema.js';
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
 * The state of one simulated run and the events of a step's attempt (start, approval, tool call and
 * result, end, retry), each drawn at random but valid where the run is. What happens next is drawn
 * by `randomJournals`' moves (random-journal.ts) and the run- and goal-level events beside it.
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

  startStep(): void {
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

  requestApproval(step: SimulatedStep): void {
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

  decide(step: SimulatedStep): void {
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

  toolResult(step: SimulatedStep): void {
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

  retry(step: SimulatedStep): void {
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
