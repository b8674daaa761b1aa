import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { StepwiseError } from '../errors.js';
import { invokeStep } from '../kernel/invoke-step.js';
import { createRunHandle } from '../run/run-handle.js';
import { finishRun, startRun } from '../run/run-session.js';
import { MemoryStore } from '../store/memory-store.js';
import { defineTool, type ToolContext } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import type { RunEvent } from './events.js';
import { LIVE_OUTPUT_MAX_CHARS, type LiveEvent } from './live-output.js';
import { createRedactor } from './redact.js';

const SECRET = 'sw-live-secret-9f8e7d6c5b4a';

/** A tool that prints in pieces and waits for `proceed` between them, so the test sees what arrives while it runs. */
function printingTool(pieces: readonly string[], proceed: () => Promise<void>) {
  return defineTool({
    name: 'printer',
    description: 'prints',
    input: z.object({}),
    effect: 'read',
    async execute(_args, ctx) {
      for (const piece of pieces) {
        ctx.output?.('stdout', piece);
        await proceed();
      }
      return { printed: pieces.join('') };
    },
  });
}

/**
 * Runs the printer; between pieces it waits `pauseMs`, or (`untilShown`) until the listener has seen
 * the piece — so "shown while the tool runs" does not depend on a loaded machine's timers.
 */
async function runPrinter(
  pieces: readonly string[],
  onLive: (event: LiveEvent, journaled: RunEvent[]) => void,
  pace: { readonly pauseMs?: number; readonly untilShown?: boolean } = {},
) {
  const store = new MemoryStore();
  let step = 0;
  let wake: (() => void) | undefined;
  const proceed = () =>
    new Promise<void>((resolve) => {
      step++;
      wake = resolve;
      setTimeout(resolve, pace.untilShown ? 10_000 : (pace.pauseMs ?? 10));
    });
  const registry = new ToolRegistry([printingTool(pieces, proceed)]);
  const plan = { version: 1 as const, id: 'printing', steps: [{ id: 'print', tool: 'printer', args: {} }] };
  const redactor = createRedactor({ secrets: [SECRET] });
  const journal = await startRun({ store, runId: 'run_live', plan, engine: 'test', redactor });
  const journaled: RunEvent[] = [];
  journal.subscribe((event) => journaled.push(event));
  const result = (async () => {
    const outcome = await invokeStep(
      plan.steps[0] as never,
      { attempt: 1, references: 'literal' },
      { runId: 'run_live', journal, registry },
    );
    return finishRun(journal, { plan, engine: 'test', status: 'completed', steps: [outcome], durationMs: 1 });
  })();
  const handle = createRunHandle({ runId: 'run_live', journal, store, result, cancel: () => undefined });
  const seen: LiveEvent[] = [];
  handle.onLive((event) => {
    seen.push(event);
    onLive(event, journaled);
    wake?.();
  });
  const ended = await result;
  return { seen, ended, steps: step, journaled, store };
}

describe('live tool output (ctx.output → handle.onLive)', () => {
  it('arrives while the tool runs, before its step ends, and is not journaled', async () => {
    const stepEndBefore: boolean[] = [];
    const { seen, journaled } = await runPrinter(
      ['building 1/3\n', 'building 2/3\n', 'done\n'],
      (_event, events) => stepEndBefore.push(events.some((event) => event.type === 'step-end')),
      { untilShown: true },
    );
    expect(seen.map((event) => event.type === 'tool-output' && event.text).join('')).toBe(
      'building 1/3\nbuilding 2/3\ndone\n',
    );
    // Each piece was shown while the tool waited for it to be seen: none waited for the step's end.
    expect(seen.length).toBe(3);
    expect(stepEndBefore.every((ended) => !ended)).toBe(true);
    const first = seen[0] as Extract<LiveEvent, { type: 'tool-output' }>;
    expect(first).toMatchObject({ runId: 'run_live', stepId: 'print', stream: 'stdout' });
    expect(JSON.stringify(journaled)).not.toContain('tool-output');
  });

  it('never shows a run secret printed in two pieces', async () => {
    const { seen, journaled } = await runPrinter([`key=${SECRET.slice(0, 10)}`, `${SECRET.slice(10)}\n`], () => {});
    const shown = seen.map((event) => event.text).join('');
    expect(shown).not.toContain(SECRET.slice(0, 10));
    expect(shown).not.toContain(SECRET.slice(10));
    expect(shown).toContain('[REDACTED]');
    expect(JSON.stringify(journaled)).not.toContain(SECRET.slice(10));
  });

  it('stops at its cap with a marker that points at the result', async () => {
    const big = `${'y'.repeat(1023)}\n`;
    const pieces = [Array.from({ length: 1100 }, () => big).join('')];
    const { seen } = await runPrinter(pieces, () => {});
    const shown = seen.map((event) => event.text).join('');
    expect(shown.length).toBeLessThanOrEqual(LIVE_OUTPUT_MAX_CHARS + 100);
    expect(shown).toMatch(/live output truncated: the whole output is in the step result/);
  });

  it('holds nothing while nobody listens and nothing is published to the store', async () => {
    const store = new MemoryStore();
    const journal = await startRun({
      store,
      runId: 'run_quiet',
      plan: { version: 1, id: 'q', steps: [{ id: 'a', tool: 't', args: {} }] },
      engine: 'test',
      liveOutputToStore: false,
    });
    journal.live.toolOutput('a', 'x1', 'stdout', 'nobody hears this\n');
    const seen: LiveEvent[] = [];
    journal.live.subscribe((event) => seen.push(event));
    journal.live.endExecution('x1');
    expect(seen).toEqual([]);
  });
});

describe('a tool that misuses ctx.output', () => {
  /** Runs one step of `execute` with a listener and the store's live tails on; returns what it saw. */
  async function runKeeping(execute: (ctx: ToolContext) => unknown) {
    const store = new MemoryStore();
    const registry = new ToolRegistry([
      defineTool({
        name: 'keeper',
        description: 'keeps its context',
        input: z.object({}),
        effect: 'read',
        execute: (_args, ctx) => execute(ctx),
      }),
    ]);
    const plan = { version: 1 as const, id: 'keeping', steps: [{ id: 'keep', tool: 'keeper', args: {} }] };
    const journal = await startRun({ store, runId: 'run_keeping', plan, engine: 'test' });
    const seen: string[] = [];
    journal.live.subscribe((event) => {
      if (event.type === 'tool-output') seen.push(event.text);
    });
    const outcome = await invokeStep(
      plan.steps[0] as never,
      { attempt: 1, references: 'literal' },
      {
        runId: 'run_keeping',
        journal,
        registry,
      },
    );
    return { store, journal, seen, outcome, plan };
  }

  it('shows nothing, and the store keeps no tail, once the call ended, though the tool kept its context', async () => {
    let kept: ToolContext | undefined;
    const { store, journal, seen, outcome, plan } = await runKeeping((ctx) => {
      kept = ctx;
      ctx.output?.('stdout', 'while running\n');
      return { done: true };
    });
    expect(outcome.status).toBe('succeeded');
    kept?.output?.('stdout', 'after the call ended\n');
    // The stream's redactor holds a piece up to a second before it shows it (a secret may continue).
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(seen.join('')).toBe('while running\n');
    expect(await store.readLiveOutput('run_keeping')).toEqual([]);
    await finishRun(journal, { plan, engine: 'test', status: 'completed', steps: [outcome], durationMs: 1 });
  });

  it('throws E004 into the tool for a stream that is not stdout or stderr, or text that is not a string', async () => {
    const refused: unknown[] = [];
    const { outcome } = await runKeeping((ctx) => {
      for (const [stream, text] of [
        ['stdout', null],
        ['stderr', Symbol('s')],
        ['stdout', 42],
        ['weird', 'text'],
      ] as const) {
        try {
          ctx.output?.(stream as 'stdout', text as unknown as string);
        } catch (error) {
          refused.push(StepwiseError.isInstance(error) ? error.code : error);
        }
      }
      return {};
    });
    expect(outcome.status).toBe('succeeded');
    expect(refused).toEqual(['E004', 'E004', 'E004', 'E004']);
  });
});
