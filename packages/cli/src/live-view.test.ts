import type { Plan, RunEvent } from '@stepwise/core';
import { describe, expect, it } from 'vitest';
import { LiveView } from './live-view.js';
import { createPalette, stripAnsi, textWidth } from './terminal.js';

const plan: Plan = {
  id: 'view',
  goal: 'Watch it',
  steps: [
    { id: 'a', tool: 'file_read' },
    { id: 'b', tool: 'run_command', dependsOn: ['a'] },
    { id: 'c', tool: 'file_write', dependsOn: ['b'] },
  ],
};

function sink(columns = 100, rows = 30) {
  let text = '';
  return {
    columns,
    rows,
    write(chunk: string) {
      text += chunk;
      return true;
    },
    get text() {
      return text;
    },
  };
}

let seq = 0;
function event(input: Record<string, unknown>): RunEvent {
  seq += 1;
  return { runId: 'run_1', seq, at: new Date(1_000 + seq).toISOString(), ...input } as unknown as RunEvent;
}

describe('LiveView', () => {
  it('shows each step with its status, elapsed time and a progress bar', () => {
    let now = 0;
    const output = sink();
    const view = new LiveView({
      plan,
      output: output as unknown as NodeJS.WritableStream,
      palette: createPalette({ isTTY: false }, {}),
      engine: 'dag',
      now: () => now,
    });
    view.update(event({ type: 'run-start' }));
    view.update(event({ type: 'step-start', stepId: 'a', attempt: 1 }));
    view.update(
      event({
        type: 'step-end',
        stepId: 'a',
        result: { stepId: 'a', status: 'succeeded', durationMs: 12, attempt: 1 },
      }),
    );
    view.update(event({ type: 'step-start', stepId: 'b', attempt: 1 }));
    now = 2_500;
    let frame = view.frame().map(stripAnsi);
    expect(frame[0]).toBe('stepwise · view · dag engine · run_1');
    expect(frame[1]).toBe('Watch it');
    expect(frame[2]).toMatch(/^ {2}✓ a\s+file_read\s+12ms/);
    expect(frame[3]).toMatch(/^ {2}[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] b\s+run_command/);
    expect(frame[4]).toMatch(/^ {2}· c\s+file_write/);
    expect(frame[5]).toMatch(/1\/3 steps · 1 running · 2\.5s$/);

    view.update(
      event({
        type: 'step-retry',
        stepId: 'b',
        attempt: 1,
        nextAttempt: 2,
        delayMs: 1_000,
        error: { code: 'E304', message: 'exit 1', retryable: true },
      }),
    );
    expect(stripAnsi(view.frame()[3] as string)).toMatch(/↻ b .*retrying in 1\.0s \(after E304\)/);
    view.update(
      event({
        type: 'step-end',
        stepId: 'b',
        result: {
          stepId: 'b',
          status: 'failed',
          durationMs: 40,
          attempt: 2,
          error: { code: 'E304', message: 'exit 1\nmore' },
        },
      }),
    );
    view.update(
      event({
        type: 'step-end',
        stepId: 'c',
        result: {
          stepId: 'c',
          status: 'skipped',
          durationMs: 0,
          attempt: 0,
          error: { code: 'E310', message: 'dependency "b" failed' },
        },
      }),
    );
    view.update(event({ type: 'run-end', status: 'failed' }));
    frame = view.frame().map(stripAnsi);
    expect(frame[3]).toMatch(/✗ b\s+run_command\s+40ms\s+E304 exit 1$/);
    expect(frame[4]).toMatch(/↷ c\s+file_write .*E310 dependency "b" failed/);
    expect(frame[5]).toMatch(/3\/3 steps · 1 failed · 2\.5s · failed$/);
  });

  it('follows a continued run past its earlier end', () => {
    const view = new LiveView({
      plan,
      output: sink() as unknown as NodeJS.WritableStream,
      palette: createPalette({ isTTY: false }, {}),
      engine: 'dag',
      now: () => 0,
    });
    view.update(event({ type: 'run-start' }));
    view.update(event({ type: 'run-end', status: 'failed' }));
    expect(stripAnsi(view.frame().at(-1) ?? '')).toMatch(/failed$/);
    view.update(event({ type: 'run-continue', from: 'failed', retry: ['b'], skip: [] }));
    const footer = stripAnsi(view.frame().at(-1) ?? '');
    expect(footer).not.toMatch(/failed$/);
    expect(view.frame().map(stripAnsi).join('\n')).toContain('retried');
  });

  it('redraws in place and clears itself for a prompt', () => {
    const output = sink();
    const view = new LiveView({
      plan,
      output: output as unknown as NodeJS.WritableStream,
      palette: createPalette({ isTTY: false }, {}),
      engine: 'dag',
      frameMs: 60_000,
    });
    view.start();
    view.render();
    // Hide the cursor, draw the first frame; for the second, move up over the first one (6 lines)
    // and write each line over the old one, erasing the rest of it and what is left below; each
    // frame with automatic wrap off (7l), on again after it (7h).
    const [before, first, between, second, ...after] = output.text.split(/\u001b\[\?7l|\u001b\[\?7h/);
    expect(before).toBe('\u001b[?25l');
    expect(between).toBe('\u001b[6A\r');
    expect(after).toEqual(['']);
    for (const frame of [first, second]) {
      const lines = (frame ?? '').split('\n');
      expect(lines).toHaveLength(7);
      expect(lines[0]).toMatch(/^stepwise · view · dag engine\u001b\[K$/);
      for (const line of lines.slice(0, 6)) expect(line).toMatch(/^[^\u001b]+\u001b\[K$/);
      expect(lines[6]).toBe('\u001b[J');
    }
    view.pause();
    expect(output.text.endsWith('\u001b[6A\r\u001b[0J')).toBe(true);
    view.stop();
    expect(output.text.endsWith('\u001b[?25h')).toBe(true);
  });

  it('keeps a tall plan within the terminal and fits lines to its width', () => {
    const tall: Plan = {
      id: 'tall',
      steps: Array.from({ length: 50 }, (_, index) => ({ id: `step-${index}-${'x'.repeat(80)}`, tool: 'file_read' })),
    };
    const view = new LiveView({
      plan: tall,
      output: sink(60, 12) as unknown as NodeJS.WritableStream,
      palette: createPalette({ isTTY: false }, {}),
      engine: 'dag',
    });
    const frame = view.frame();
    expect(frame.length).toBeLessThanOrEqual(12);
    expect(frame.some((line) => /… \d+ more steps/.test(line))).toBe(true);
    for (const line of frame) expect(stripAnsi(line).length).toBeLessThanOrEqual(59);
  });

  it('fits wide characters, emoji and colours to the terminal by columns, one screen line each', () => {
    const wide: Plan = {
      id: '計画',
      goal: `${'日本語のゴールを表示する。'.repeat(6)} 👨‍👩‍👧‍👦❤️ cafe\u0301`,
      steps: [
        { id: 'read', tool: 'file_read' },
        { id: 'build', tool: 'run_command' },
        { id: 'write', tool: 'file_write', dependsOn: ['read'] },
      ],
    };
    const view = new LiveView({
      plan: wide,
      output: sink(60, 20) as unknown as NodeJS.WritableStream,
      palette: createPalette({ isTTY: true }, {}),
      engine: 'dag',
      now: () => 0,
    });
    view.update(event({ type: 'step-start', stepId: 'read', attempt: 1 }));
    view.update(
      event({ type: 'progress-report', stepId: 'read', percent: 40, message: '読み込み中 👨‍👩‍👧‍👦 '.repeat(5) }),
    );
    view.update(
      event({
        type: 'step-end',
        stepId: 'build',
        result: {
          stepId: 'build',
          status: 'failed',
          attempt: 1,
          error: { code: 'E304', message: 'ビルド失敗 '.repeat(8) },
        },
      }),
    );
    const frame = view.frame();
    for (const line of frame) expect(textWidth(line), stripAnsi(line)).toBeLessThanOrEqual(59);
    // Cut to the terminal's columns, not to 59 UTF-16 units (up to 118 columns: two screen lines).
    for (const index of [1, 2, 3]) {
      expect(textWidth(frame[index] as string)).toBeGreaterThanOrEqual(57);
      expect(stripAnsi(frame[index] as string).endsWith('…')).toBe(true);
    }
    expect(stripAnsi(frame[2] as string)).toMatch(/^ {2}[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] read\s+file_read\s+0ms\s+40% 読み込み中 👨‍👩‍👧‍👦/);
  });

  it("shows the tail of a running step's output under it, stripped of terminal control, and drops it at the step's end", () => {
    const view = new LiveView({
      plan,
      output: sink() as unknown as NodeJS.WritableStream,
      palette: createPalette({ isTTY: false }, {}),
      engine: 'dag',
      now: () => 0,
    });
    view.update(event({ type: 'step-start', stepId: 'b', attempt: 1 }));
    const live = (text: string) =>
      view.live({ type: 'tool-output', runId: 'run_1', stepId: 'b', executionId: 'x', stream: 'stdout', text, at: 0 });
    live('compiling 1/9\n');
    live('compiling 2/9\nlinking \u001b[31mred\u001b[0m\u001b]0;owned\u0007 ');
    live('50%\r\u001b[2J\u001b[Hlinking 100%');
    const frame = view.frame().map(stripAnsi);
    const b = frame.findIndex((line) => line.includes(' b '));
    expect(frame.slice(b + 1, b + 3)).toEqual(['      │ compiling 2/9', '      │ linking 100%']);
    expect(frame.join('\n')).not.toMatch(/owned|\u001b\[2J|\u0007/);
    view.update(event({ type: 'step-end', stepId: 'b', result: { status: 'succeeded', durationMs: 5 } }));
    expect(view.frame().map(stripAnsi).join('\n')).not.toContain('│');
  });
});
