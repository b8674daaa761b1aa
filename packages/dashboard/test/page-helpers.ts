import { foldRun, type RunEvent, type RunStore, readAll } from '@stepwise/core';
import type { Page } from 'playwright-core';
import type { Harness } from './dashboard-harness.js';

/** Opens a run's page and waits until its live stream is connected. */
export async function openRunPage(page: Page, harness: Harness, runId: string): Promise<void> {
  await page.goto(`${harness.server.url}runs/${encodeURIComponent(runId)}`);
  await page.waitForSelector('#live-state.live');
}

/**
 * A journal without what differs between two runs of one plan (ids, times, owners): event types
 * with their step, decision, status and who, in order.
 */
export function journalShape(events: readonly RunEvent[]): string[] {
  return events.map((event) => {
    const record = event as unknown as Record<string, unknown>;
    const result = record.result as { status?: string } | undefined;
    const parts = [
      event.type,
      record.stepId,
      record.decision,
      result?.status,
      event.type === 'run-end' ? record.status : undefined,
      record.by,
    ];
    return parts.filter((part) => part !== undefined).join(' ');
  });
}

export async function shapeOf(store: RunStore, runId: string): Promise<string[]> {
  return journalShape(await readAll(store, runId));
}

/** Each step's status, as core's fold of the journal says. */
export async function stepStatuses(store: RunStore, runId: string): Promise<Record<string, string>> {
  const run = foldRun(await readAll(store, runId));
  return Object.fromEntries([...run.steps].map(([stepId, step]) => [stepId, step.status]));
}
