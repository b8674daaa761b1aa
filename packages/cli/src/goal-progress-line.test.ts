import type { Plan, RunEvent } from '@stepwise/core';
import type { GoalProgressEvent } from '@stepwise/core/store';
import { goalProgressLine } from '@stepwise/dashboard/report';
import { describe, expect, it } from 'vitest';
import { LiveView } from './live-view.js';
import { createPalette, stripAnsi } from './terminal.js';

function progress(extra: Partial<GoalProgressEvent> = {}): GoalProgressEvent {
  return {
    type: 'goal-progress',
    runId: 'run_goal',
    seq: 3,
    at: new Date(2_000).toISOString(),
    stepId: 'fix',
    attempt: 1,
    turn: 3,
    decision: 'command',
    criteria: [],
    toolCalls: 1,
    toolFailures: 0,
    ...extra,
  };
}

describe('goalProgressLine', () => {
  it('says the turn and decision, criteria met, goals achieved, failures and the first line of the note', () => {
    const line = goalProgressLine(
      progress({
        decision: 'complete',
        note: 'Tests pass now.\nDetails follow.',
        criteria: [
          { criterion: 'the file a exists', status: 'met' },
          { criterion: 'npm test exits with 0', status: 'unmet', message: 'exit code 1' },
        ],
        goals: [
          { goal: 'fix the bug', status: 'achieved' },
          { goal: 'add a test', status: 'in_progress' },
          { goal: 'update docs', status: 'in_progress' },
        ],
        toolFailures: 2,
      }),
    );
    expect(line).toBe('turn 3 · complete · 1/2 criteria met · 1/3 goals achieved · 2 failed calls · Tests pass now.');
  });

  it('says when no criterion was checked yet and leaves out what the turn does not have', () => {
    expect(goalProgressLine(progress({ criteria: [{ criterion: 'x', status: 'unchecked' }] }))).toBe(
      'turn 3 · command · 1 criteria not checked yet',
    );
    expect(goalProgressLine(progress({ decision: 'analyze', note: '   ' }))).toBe('turn 3 · analyze');
  });
});

describe('LiveView with goal steps', () => {
  it('shows the latest goal progress on the step line, and keeps it once the step ended', () => {
    const plan: Plan = { id: 'goals', steps: [{ id: 'fix', description: 'fix the bug' }] };
    const output = { columns: 160, rows: 20, write: () => true };
    const view = new LiveView({
      plan,
      output: output as unknown as NodeJS.WritableStream,
      palette: createPalette({ isTTY: false }, {}),
      engine: 'agentic',
      now: () => 2_500,
    });
    const stepLine = () =>
      view
        .frame()
        .map(stripAnsi)
        .find((line) => line.includes(' fix '));
    const at = new Date(1_000).toISOString();
    view.update({ type: 'run-start', runId: 'run_goal', seq: 1, at } as RunEvent);
    view.update({
      type: 'step-start',
      runId: 'run_goal',
      seq: 2,
      at,
      stepId: 'fix',
      tool: undefined,
      attempt: 1,
      executionId: 'ex_fix',
    });
    view.update(progress({ turn: 1, note: 'Reading the failing test.' }));
    expect(stepLine()).toMatch(/fix\s+agentic\s+1\.5s\s+turn 1 · command · Reading the/);
    view.update(progress({ turn: 2, decision: 'complete', criteria: [{ criterion: 'x', status: 'met' }] }));
    view.update({
      type: 'step-end',
      runId: 'run_goal',
      seq: 5,
      at,
      stepId: 'fix',
      result: {
        stepId: 'fix',
        tool: undefined,
        status: 'succeeded',
        executionId: 'ex_fix',
        attempt: 1,
        startedAt: at,
        durationMs: 900,
      },
    });
    expect(stepLine()).toMatch(/✓ fix\s+agentic\s+900ms\s+turn 2 · complete · 1\/1 criteria met$/);
  });
});
