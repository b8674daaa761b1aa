import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type RunEvent, type RunStore, readAll } from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
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

/**
 * The journal's shape with concurrent steps taken apart: the run's own events in order, and each
 * step's events in order. Steps that run side by side may interleave either way in the journal.
 */
export async function shapeByStep(
  store: RunStore,
  runId: string,
): Promise<{ run: string[]; steps: Record<string, string[]> }> {
  const events = await readAll(store, runId);
  const lines = journalShape(events);
  const run: string[] = [];
  const steps: Record<string, string[]> = {};
  events.forEach((event, index) => {
    const stepId = (event as { stepId?: string }).stepId;
    const line = lines[index] as string;
    if (stepId === undefined) {
      run.push(line);
      return;
    }
    const ofStep = steps[stepId] ?? [];
    ofStep.push(line);
    steps[stepId] = ofStep;
  });
  return { run, steps };
}

/** Each step's status, as core's fold of the journal says. */
export async function stepStatuses(store: RunStore, runId: string): Promise<Record<string, string>> {
  const run = foldRun(await readAll(store, runId));
  return Object.fromEntries([...run.steps].map(([stepId, step]) => [stepId, step.status]));
}

const ELSEWHERE = fileURLToPath(new URL('./fixtures/run-elsewhere.mjs', import.meta.url));

/**
 * Starts a run in a child process (a SQLite file or a postgres:// URL); resolves with its id once
 * it has started, and with its end. Its second step holds until `release()`, so a page is sure to
 * see it running however slow the machine is.
 */
export function runElsewhere(
  database: string,
  steps: number,
  stepMs: number,
  schema = 'stepwise',
  env: NodeJS.ProcessEnv = {},
) {
  const gate = path.join(mkdtempSync(path.join(tmpdir(), 'stepwise-gate-')), 'release');
  const child = spawn(process.execPath, [ELSEWHERE, database, String(steps), String(stepMs), schema], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, STEPWISE_TEST_GATE: gate, ...env },
  });
  const lines = createInterface({ input: child.stdout });
  const messages: Record<string, string>[] = [];
  let notify: (() => void) | undefined;
  lines.on('line', (line) => {
    messages.push(JSON.parse(line));
    notify?.();
  });
  const next = (key: string) =>
    new Promise<string>((resolve, reject) => {
      const look = () => {
        const found = messages.find((message) => key in message);
        if (found) resolve(found[key] as string);
      };
      notify = look;
      look();
      child.once('exit', (code) => reject(new Error(`the run's process exited (${code}) before printing ${key}`)));
    });
  return { runId: next('runId'), status: () => next('status'), release: () => writeFileSync(gate, ''), child };
}
