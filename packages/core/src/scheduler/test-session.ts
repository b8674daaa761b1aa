import type { RunEvent, StepResult } from '../journal/events.js';
import type { Durability, RunJournal } from '../journal/journal.js';
import { readAll } from '../journal/run-store.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import type { RetainOutputs } from '../run/engine-options.js';
import { startRun } from '../run/run-session.js';
import { MemoryStore } from '../store/memory-store.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { buildDependencyGraph } from './dependency-graph.js';
import type { EnginePolicy, SchedulerObserver } from './engine-policy.js';
import { RunLoop } from './run-loop.js';
import { SessionControl } from './session-control.js';
import { StepBoard } from './step-board.js';
import { StepObserver, type Warn } from './step-observer.js';

/** A permissive policy with no retries' jitter (`random` is 0.5: backoffs are exact). */
export function testPolicy(overrides: Partial<EnginePolicy> = {}): EnginePolicy {
  return {
    name: 'test',
    validation: 'dag',
    references: 'resolve',
    stopOn: 'critical',
    unstarted: 'end',
    duration: 'wall',
    concurrency: Number.POSITIVE_INFINITY,
    toolConcurrency: {},
    retry: {},
    random: () => 0.5,
    onStepFailed: undefined,
    goalSteps: undefined,
    ...overrides,
  };
}

export interface TestSessionOptions {
  readonly policy?: EnginePolicy;
  readonly tools?: ToolRegistry;
  readonly store?: MemoryStore;
  readonly durability?: Durability;
  readonly retainOutputs?: RetainOutputs;
  readonly observer?: SchedulerObserver;
}

/**
 * A session's shared parts for a scheduler part's unit test: a real journal on a `MemoryStore`,
 * the board, the session's control and a real `RunLoop` whose runner only claims and records the
 * attempts it is given (and frees their slots), so a test sees what the part under test queued.
 */
export interface TestSession {
  readonly plan: Plan;
  readonly store: MemoryStore;
  readonly journal: RunJournal;
  readonly policy: EnginePolicy;
  readonly tools: ToolRegistry;
  readonly board: StepBoard;
  readonly control: SessionControl;
  readonly observer: StepObserver;
  readonly loop: RunLoop;
  /** Attempts the loop started, in order. */
  readonly started: { readonly stepId: string; readonly attempt: number }[];
  /** Warnings logged by the parts. */
  readonly warnings: { readonly message: string; readonly error: unknown }[];
  readonly warn: Warn;
  /** Everything journaled so far (flushed first). */
  events(): Promise<RunEvent[]>;
  /** A result as the kernel would return it, for a step that ran. */
  result(stepId: string, status: StepResult['status'], extra?: Partial<StepResult>): StepResult;
}

export async function openTestSession(plan: Plan, options: TestSessionOptions = {}): Promise<TestSession> {
  const store = options.store ?? new MemoryStore();
  const runId = `run_${plan.id}`;
  const journal = await startRun({
    store,
    runId,
    plan,
    engine: 'test',
    ...(options.durability ? { durability: options.durability } : {}),
  });
  const policy = options.policy ?? testPolicy();
  const tools = options.tools ?? new ToolRegistry();
  const board = new StepBoard(plan, buildDependencyGraph(plan), journal, options.retainOutputs);
  const control = new SessionControl();
  const warnings: TestSession['warnings'] = [];
  const warn: Warn = (message, error) => warnings.push({ message, error });
  const observer = new StepObserver(options.observer ?? {}, warn);
  const started: TestSession['started'] = [];
  const run = async (queued: Parameters<RunLoop['free']>[0]) => {
    // Taken to start, as the real runner marks it: a revision may no longer change the step.
    queued.slot.claimed = true;
    started.push({ stepId: queued.slot.step.id, attempt: queued.attempt });
    loop.free(queued);
  };
  const loop: RunLoop = new RunLoop({ board, journal, control, observer, policy, tools, run });
  return {
    plan,
    store,
    journal,
    policy,
    tools,
    board,
    control,
    observer,
    loop,
    started,
    warnings,
    warn,
    async events() {
      await journal.flush();
      return readAll(store, runId);
    },
    result: (stepId, status, extra = {}) => ({
      stepId,
      tool: board.byId(stepId)?.step.tool,
      status,
      executionId: deriveExecutionId(runId, stepId, extra.attempt ?? 1),
      attempt: 1,
      startedAt: new Date(0).toISOString(),
      durationMs: 1,
      ...extra,
    }),
  };
}
