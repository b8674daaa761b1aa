import type { RunEventInput } from '../journal/events.js';
import type { JournalSimulation, SimulatedStep } from './journal-simulation.js';
import { chance, type Draw, pick, randomError, randomText, randomUsage, randomValue } from './random-values.js';

function progress(
  simulation: JournalSimulation,
  step: SimulatedStep,
  decision: 'command' | 'analyze' | 'complete' | 'blocked',
) {
  const { draw } = simulation;
  simulation.emit({
    type: 'goal-progress',
    stepId: step.id,
    attempt: step.attempt,
    turn: step.turn,
    decision,
    ...(chance(draw, 50) ? { note: randomText(draw, 4) } : {}),
    ...(chance(draw, 30) ? { goals: [{ goal: randomText(draw, 2), status: 'in_progress' as const }] } : {}),
    criteria: chance(draw, 30) ? [{ criterion: 'the tests pass', status: 'unmet' as const }] : [],
    toolCalls: draw(0, 2),
    toolFailures: draw(0, 2),
  });
}

/** One turn of a goal step's model loop: the model call, then a tool call, analysis, completion, a question or a limit. */
export function goalTurn(simulation: JournalSimulation, step: SimulatedStep): void {
  const { draw } = simulation;
  step.turn += 1;
  const usage = randomUsage(draw);
  simulation.emit({
    type: 'model-call',
    stepId: step.id,
    ...(chance(draw, 70) ? { attempt: step.attempt } : {}),
    turn: step.turn,
    model: pick(draw, ['scripted', 'local-model']),
    ...(chance(draw, 30) ? { endpoint: 'http://localhost:11434/v1' } : {}),
    request: { messages: [{ role: 'user', content: randomText(draw) }] },
    ...(chance(draw, 85) ? { response: randomValue(draw) } : { error: randomError(draw) }),
    ...(usage ? { usage } : {}),
    latencyMs: draw(0, 3000) / 3,
  });
  const roll = draw(0, 99);
  if (roll < 40) {
    progress(simulation, step, 'command');
    step.callId = `ex_${simulation.runId}_${step.id}_${step.attempt}_${step.turn}`;
    simulation.callTool(step, step.turn);
  } else if (roll < 60) {
    progress(simulation, step, 'analyze');
  } else if (roll < 75) {
    progress(simulation, step, 'complete');
    simulation.endStep(step, 'succeeded');
  } else if (roll < 85) {
    const requestId = `q_${step.id}_${step.attempt}_${step.turn}`;
    simulation.emit({
      type: 'question-ask',
      stepId: step.id,
      requestId,
      attempt: step.attempt,
      turn: step.turn,
      cause: pick(draw, ['blocked', 'turns', 'tool-failures']),
      question: randomText(draw, 5),
    });
    simulation.waiting.set(requestId, { stepId: step.id, question: true });
    simulation.endStep(step, 'waiting');
  } else {
    simulation.emit({ type: 'limit-reach', stepId: step.id, limit: 'turns', value: step.turn });
    simulation.endStep(step, 'failed');
  }
}

/** Types of events other packages journal (extension events): core folds none of them. */
export const EXTENSION_EVENT_TYPES: readonly string[] = ['deploy-end', 'lint-report', 'review-note'];

/** Where an extension event is journaled, and draws for its fields. */
export interface ExtensionEventContext {
  readonly draw: Draw;
  readonly runId: string;
  readonly stepId: string;
  /** The step's current attempt (0 before it first started). */
  readonly attempt: number;
  /** The plan's revision (undefined before the first `plan-revise`). */
  readonly revision: number | undefined;
  /** Text of up to `words` words (default 6), now and then over 4 KB, so that stores move it to blobs. */
  readonly text: (words?: number) => string;
  /** Any JSON value. */
  readonly value: () => unknown;
}

/** An event of a type core does not declare, without `runId`, `seq` and `at` (the journal adds them). */
export interface ExtensionEventInput {
  readonly type: string;
  readonly [field: string]: unknown;
}

/**
 * The extension events (`RunEventExtensions`) journaled at one point of a step, in order. Their types
 * must not be core's own: the fold passes over them and stores must keep them byte-exact.
 */
export type ExtensionEventGenerator = (context: ExtensionEventContext) => readonly ExtensionEventInput[];

/** The default: one event of a generic type with a payload of any JSON shape, often about the step. */
export const genericExtensionEvents: ExtensionEventGenerator = ({ draw, stepId, attempt, text, value }) => [
  {
    type: pick(draw, EXTENSION_EVENT_TYPES),
    ...(chance(draw, 70) ? { stepId, attempt } : {}),
    payload: value(),
    ...(chance(draw, 30) ? { output: text() } : {}),
  },
];

function extensionEvents(simulation: JournalSimulation, step: SimulatedStep, generate: ExtensionEventGenerator): void {
  const { draw, runId } = simulation;
  const events = generate({
    draw,
    runId,
    stepId: step.id,
    attempt: step.attempt,
    revision: simulation.plan.revision,
    text: (words) => randomText(draw, words),
    value: () => randomValue(draw),
  });
  // No package registered these types here: `RunEventInput` names only the registered ones.
  for (const event of events) simulation.emit(event as unknown as RunEventInput);
}

/**
 * An event that only the journal records (or that the fold keeps aside): progress, processes, decisions,
 * limits, extension events (from `generate`).
 */
export function miscEvent(simulation: JournalSimulation, step: SimulatedStep, generate: ExtensionEventGenerator): void {
  const { draw } = simulation;
  const executionId = step.callId || `ex_${simulation.runId}_none`;
  switch (draw(0, 6)) {
    case 0:
      simulation.emit({ type: 'progress-report', stepId: step.id, executionId, percent: draw(0, 100) });
      break;
    case 1:
      simulation.emit({
        type: 'process-start',
        stepId: step.id,
        executionId,
        pid: draw(2, 60000),
        processGroup: draw(2, 60000),
        host: 'test-host',
        ...(chance(draw, 50) ? { command: ['node', 'build.js'] } : {}),
      });
      break;
    case 2:
      simulation.emit({
        type: 'recovery-decision',
        stepId: step.id,
        attempt: step.attempt,
        decision: pick(draw, ['retry', 'skip', 'abort']),
      });
      break;
    case 3:
      simulation.emit({
        type: 'adjust-decision',
        stepId: step.id,
        attempt: step.attempt,
        status: 'succeeded',
        decision: pick(draw, ['continue', 'stop']),
        ...(chance(draw, 50) ? { reason: randomText(draw, 3) } : {}),
      });
      break;
    case 4:
      simulation.emit({ type: 'limit-reach', stepId: step.id, limit: 'token-budget', value: draw(0, 9000) });
      break;
    case 5:
      extensionEvents(simulation, step, generate);
      break;
    default:
      progress(simulation, step, 'analyze');
  }
}
