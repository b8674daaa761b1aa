import type { RunEvent } from '@stepwise/core';

/** A stretch of time a step spent waiting for a person (milliseconds since the run's first event). */
export interface WaitSpan {
  readonly stepId: string;
  readonly start: number;
  readonly end: number;
  /** Still waiting when the journal ends: `end` is the time the caller asked for (now, or the last event). */
  readonly open: boolean;
}

/** How one step spent its time, from the journal's timestamps. */
export interface StepTiming {
  /** Time its attempts were working (the tool, or a goal step's model and tools), summed; waits excluded. */
  readonly toolMs: number;
  /** Time it waited for a person: an approval or a question, asked until answered or until the run resumed. */
  readonly waitingMs: number;
  /** Backoff between its attempts (journaled by `step-retry`). */
  readonly retryDelayMs: number;
  readonly waits: readonly WaitSpan[];
}

export interface RunTimings {
  readonly steps: ReadonlyMap<string, StepTiming>;
  /** Time at least one step waited for a person (overlapping waits counted once). */
  readonly waitingMs: number;
}

interface Interval {
  start: number;
  end: number;
}

function overlap(a: Interval, b: Interval): number {
  return Math.max(0, Math.min(a.end, b.end) - Math.max(a.start, b.start));
}

function unionLength(intervals: readonly Interval[]): number {
  let total = 0;
  let current: Interval | undefined;
  for (const interval of [...intervals].sort((a, b) => a.start - b.start)) {
    if (current && interval.start <= current.end) {
      current.end = Math.max(current.end, interval.end);
      continue;
    }
    if (current) total += current.end - current.start;
    current = { ...interval };
  }
  return total + (current ? current.end - current.start : 0);
}

/**
 * Splits each step's time into working and waiting, from the event timestamps. A wait starts when
 * a step asks a person (`approval-request`, `question-ask`) and ends with the decision, or, for a
 * run that stopped `waiting`, when the run resumes. An attempt runs from `step-start` to its
 * `step-end` (or to the next attempt, or to a resume after a crash); its working time is its span
 * minus the waits inside it. `until` closes what is still open (ms since the first event; default
 * the last event).
 */
export function stepTimings(events: readonly RunEvent[], until?: number): RunTimings {
  const origin = events.length > 0 ? Date.parse((events[0] as RunEvent).at) : 0;
  const time = (at: string) => Date.parse(at) - origin;
  const end = until ?? (events.length > 0 ? time((events[events.length - 1] as RunEvent).at) : 0);
  const attempts = new Map<string, Interval[]>();
  const openAttempt = new Map<string, { executionId: string; interval: Interval }>();
  const waits: WaitSpan[] = [];
  const openWait = new Map<string, number>();
  const retryDelays = new Map<string, number>();
  const answered = new Set<string>();
  const closeAttempt = (stepId: string, at: number) => {
    const open = openAttempt.get(stepId);
    if (!open) return;
    openAttempt.delete(stepId);
    open.interval.end = Math.max(at, open.interval.start);
    attempts.set(stepId, [...(attempts.get(stepId) ?? []), open.interval]);
  };
  const closeWait = (stepId: string, at: number, open = false) => {
    const start = openWait.get(stepId);
    if (start === undefined) return;
    openWait.delete(stepId);
    waits.push({ stepId, start, end: Math.max(at, start), open });
  };
  for (const event of events) {
    const at = time(event.at);
    switch (event.type) {
      case 'run-resume':
      case 'run-continue':
        for (const stepId of [...openWait.keys()]) closeWait(stepId, at);
        if (event.type === 'run-resume') for (const stepId of [...openAttempt.keys()]) closeAttempt(stepId, at);
        break;
      case 'step-start':
        closeAttempt(event.stepId, at);
        openAttempt.set(event.stepId, { executionId: event.executionId, interval: { start: at, end: at } });
        break;
      case 'step-end':
        if (openAttempt.get(event.stepId)?.executionId === event.result.executionId) closeAttempt(event.stepId, at);
        break;
      case 'approval-response':
        // A question's answer goes to the model; only an approval is asked again on resume.
        if (event.decision !== 'answer') answered.add(event.stepId);
        break;
      case 'approval-request':
      case 'question-ask':
        // Asked again on resume with the answer already journaled: decided at once, no one waits.
        if (!openWait.has(event.stepId) && !answered.has(event.stepId)) openWait.set(event.stepId, at);
        break;
      case 'approval-decision':
        answered.delete(event.stepId);
        closeWait(event.stepId, at);
        break;
      case 'step-retry':
        retryDelays.set(event.stepId, (retryDelays.get(event.stepId) ?? 0) + event.delayMs);
        break;
      default:
        break;
    }
  }
  for (const stepId of [...openAttempt.keys()]) closeAttempt(stepId, end);
  for (const stepId of [...openWait.keys()]) closeWait(stepId, end, true);

  const steps = stepSummaries(attempts, waits, retryDelays);
  return { steps, waitingMs: unionLength(waits) };
}

/** Each step's working time (its attempts less the waits inside them), waits and retry delays. */
function stepSummaries(
  attempts: ReadonlyMap<string, readonly Interval[]>,
  waits: readonly WaitSpan[],
  retryDelays: ReadonlyMap<string, number>,
): Map<string, StepTiming> {
  const waitsOf = new Map<string, WaitSpan[]>();
  for (const wait of waits) {
    const own = waitsOf.get(wait.stepId);
    if (own) own.push(wait);
    else waitsOf.set(wait.stepId, [wait]);
  }
  const steps = new Map<string, StepTiming>();
  for (const stepId of new Set([...attempts.keys(), ...waitsOf.keys()])) {
    const own = waitsOf.get(stepId) ?? [];
    const spans = attempts.get(stepId) ?? [];
    const worked = spans.reduce(
      (total, span) => total + (span.end - span.start) - own.reduce((inside, wait) => inside + overlap(span, wait), 0),
      0,
    );
    steps.set(stepId, {
      toolMs: Math.max(0, worked),
      waitingMs: own.reduce((total, wait) => total + (wait.end - wait.start), 0),
      retryDelayMs: retryDelays.get(stepId) ?? 0,
      waits: own,
    });
  }
  return steps;
}
