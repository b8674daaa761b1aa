import type { RunEvent } from '@stepwise/core';
import { goalProgressLine } from './goal-progress-line.js';

/** Each goal step's progress, one line per model turn, in journal order (attempts and resumes included). */
export function goalProgressByStep(events: readonly RunEvent[]): Map<string, string[]> {
  const byStep = new Map<string, string[]>();
  for (const event of events) {
    if (event.type !== 'goal-progress') continue;
    const lines = byStep.get(event.stepId) ?? [];
    lines.push(event.attempt > 1 ? `attempt ${event.attempt} · ${goalProgressLine(event)}` : goalProgressLine(event));
    byStep.set(event.stepId, lines);
  }
  return byStep;
}
