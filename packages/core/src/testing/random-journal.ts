import type { RunEvent } from '../journal/events.js';
import { JournalSimulation, type SimulatedStep } from './journal-simulation.js';
import { afterEnd, endRun, resumeRun, revisePlan } from './random-run-events.js';
import { type ExtensionEventGenerator, genericExtensionEvents, goalTurn, miscEvent } from './random-step-events.js';
import { chance, type Draw, pick } from './random-values.js';

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
  /**
   * The extension events journaled now and then at a step (as often as without it). Default: one event
   * of a generic type (`deploy-end`, `lint-report`, `review-note`) with any payload. A store whose views
   * read another package's events passes events of their shapes, so that the views are checked.
   */
  readonly extensionEvents?: ExtensionEventGenerator;
}

/**
 * Random journals: one to `maxRuns` runs, each a valid journal (it folds) of an engine's moves,
 * split into random batches. Feed them to a store with `checkStoreAgainstFold`.
 */
export function randomJournals(draw: Draw, options: RandomJournalOptions = {}): GeneratedJournal[] {
  const prefix = options.prefix ?? 'run';
  const extensionEvents = options.extensionEvents ?? genericExtensionEvents;
  const runs = draw(1, options.maxRuns ?? 3);
  const journals: GeneratedJournal[] = [];
  for (let index = 0; index < runs; index++) {
    // Runs created in the same millisecond list in the order they were first written.
    const startTime = Date.UTC(2030, 0, 1) + draw(0, 3) * 60_000;
    const simulation = new JournalSimulation(draw, `${prefix}_${index}`, options.planId ?? 'plan', startTime);
    simulation.start();
    const moves = draw(0, options.maxMoves ?? 40);
    for (let index = 0; index < moves; index++) move(simulation, extensionEvents);
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

/**
 * One move: what a running run does next, or what happens to an ended one. Steps start, ask for
 * approval, call tools, end, retry; goal steps talk to a model; the plan is revised; the run ends,
 * continues, resumes after a crash. Every journal folds without error (`foldRun`).
 */
function move(simulation: JournalSimulation, extensionEvents: ExtensionEventGenerator): void {
  if (simulation.ended !== undefined) {
    afterEnd(simulation);
    return;
  }
  const { draw } = simulation;
  const running = [...simulation.steps.values()].filter((step) => step.phase !== 'idle');
  const roll = draw(0, 99);
  if (roll < 40 && running.length > 0) advance(simulation, pick(draw, running), extensionEvents);
  else if (roll < 70) simulation.startStep();
  else if (roll < 80) miscEvent(simulation, pick(draw, [...simulation.steps.values()]), extensionEvents);
  else if (roll < 86) revisePlan(simulation);
  else if (roll < 90) resumeRun(simulation);
  else if (roll < 95 && running.length > 0) advance(simulation, pick(draw, running), extensionEvents);
  else endRun(simulation);
}

/** The next event of a step in flight, by how far its attempt got. */
function advance(simulation: JournalSimulation, step: SimulatedStep, extensionEvents: ExtensionEventGenerator): void {
  const { draw } = simulation;
  switch (step.phase) {
    case 'started':
      if (step.tool === undefined) goalTurn(simulation, step);
      else if (chance(draw, 25)) simulation.requestApproval(step);
      else if (chance(draw, 80)) simulation.callTool(step);
      else simulation.endStep(step, pick(draw, ['skipped', 'cancelled', 'denied', 'failed']));
      break;
    case 'requested':
      simulation.decide(step);
      break;
    case 'called':
      if (chance(draw, 15)) miscEvent(simulation, step, extensionEvents);
      else simulation.toolResult(step);
      break;
    default:
      simulation.endStep(step, chance(draw, 70) ? 'succeeded' : 'failed');
      if (chance(draw, 30)) simulation.retry(step);
  }
}
