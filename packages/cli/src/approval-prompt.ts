import os from 'node:os';
import type { ApprovalDecision, ApprovalHandler, ApprovalRequest } from '@stepwise/core';
import { previewChange } from './approval-preview.js';
import type { LiveView } from './live-view.js';
import type { CommandIo, Palette } from './terminal.js';

export interface TtyApprovalOptions {
  readonly io: CommandIo;
  readonly palette: Palette;
  readonly workspace: string;
  /** Paused while a question is on screen. */
  readonly view?: LiveView;
  /** Ctrl-C at the prompt: the step is denied and this is called (the run is cancelled). */
  readonly onInterrupt?: () => void;
  /** Lines of diff shown before `[v]iew`. Default 20. */
  readonly previewLines?: number;
}

const KEYS: Readonly<Record<string, ApprovalDecision['decision'] | 'view' | 'interrupt'>> = {
  a: 'approve',
  y: 'approve',
  d: 'deny',
  n: 'deny',
  s: 'skip',
  v: 'view',
  '\u0003': 'interrupt',
};

function colourDiff(diff: string, palette: Palette): string[] {
  return diff
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => {
      if (line.startsWith('+++') || line.startsWith('---')) return palette.bold(line);
      if (line.startsWith('+')) return palette.green(line);
      if (line.startsWith('-')) return palette.red(line);
      if (line.startsWith('@@')) return palette.cyan(line);
      return line;
    });
}

function readKey(io: CommandIo, signal: AbortSignal): Promise<string> {
  const { stdin } = io;
  return new Promise((resolve) => {
    const finish = (key: string) => {
      stdin.off('data', onData);
      signal.removeEventListener('abort', onAbort);
      stdin.setRawMode?.(false);
      stdin.pause();
      resolve(key);
    };
    const onData = (chunk: Buffer | string) => finish(chunk.toString().toLowerCase());
    const onAbort = () => finish('cancelled');
    stdin.setRawMode?.(true);
    stdin.resume();
    stdin.on('data', onData);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * An `ApprovalHandler` that asks at the terminal: `[a]pprove [d]eny [v]iew [s]kip`, with a
 * diff preview for file writes and edits. Questions are asked one at a time even when the
 * dag engine requests several approvals at once.
 */
export function createTtyApprovalHandler(options: TtyApprovalOptions): ApprovalHandler {
  const { io, palette } = options;
  const previewLines = options.previewLines ?? 20;
  const by = (() => {
    try {
      return os.userInfo().username;
    } catch {
      return 'terminal';
    }
  })();
  let queue: Promise<unknown> = Promise.resolve();
  const write = (text: string) => io.stdout.write(text);

  const ask = async (request: ApprovalRequest): Promise<ApprovalDecision> => {
    if (request.signal.aborted) return { decision: 'deny', by, reason: 'run cancelled' };
    options.view?.pause();
    try {
      const preview = await previewChange(request.tool, request.args, options.workspace).catch(() => undefined);
      const why =
        request.reason === 'step'
          ? 'the plan marks this step requiresApproval'
          : `the policy asks for ${request.effect} tools`;
      write(
        `\n${palette.yellow('?')} ${palette.bold('Approval needed')}: step ${palette.bold(request.stepId)} wants ${palette.cyan(request.tool)} (${request.effect}) ${palette.gray(`— ${why}`)}\n`,
      );
      if (request.description) write(`  ${palette.gray(request.description)}\n`);
      const argsText = JSON.stringify(request.args, null, 2) ?? '{}';
      const argLines = argsText.split('\n');
      const shortArgs = argLines.length > 12 ? [...argLines.slice(0, 12), '  …'] : argLines;
      if (!preview) for (const line of shortArgs) write(`  ${line}\n`);
      if (preview) {
        for (const note of preview.notes) write(`  ${palette.yellow('!')} ${note}\n`);
        const lines = colourDiff(preview.diff, palette);
        for (const line of lines.slice(0, previewLines)) write(`  ${line}\n`);
        if (lines.length > previewLines)
          write(`  ${palette.gray(`… ${lines.length - previewLines} more lines: [v]iew`)}\n`);
        if (preview.diff === '' && preview.notes.length === 0) write(`  ${palette.gray('(no change to the file)')}\n`);
      }
      while (true) {
        write(
          `  ${palette.bold('[a]')}pprove ${palette.bold('[d]')}eny ${palette.bold('[v]')}iew ${palette.bold('[s]')}kip › `,
        );
        const key = await readKey(io, request.signal);
        const action = key === 'cancelled' ? 'interrupt' : (KEYS[key.trim().charAt(0)] ?? KEYS[key]);
        if (action === 'view') {
          write('view\n');
          for (const line of argsText.split('\n')) write(`  ${line}\n`);
          if (preview) for (const line of colourDiff(preview.diff, palette)) write(`  ${line}\n`);
          continue;
        }
        if (action === 'interrupt') {
          write(`${palette.red('interrupted')}\n`);
          options.onInterrupt?.();
          return { decision: 'deny', by, reason: 'interrupted at the prompt' };
        }
        if (action === undefined) {
          write(`${palette.gray('(press a, d, v or s)')}\n`);
          continue;
        }
        const shown = {
          approve: palette.green('approved'),
          deny: palette.red('denied'),
          skip: palette.gray('skipped'),
        };
        write(`${shown[action]}\n`);
        return { decision: action, by };
      }
    } finally {
      options.view?.resume();
    }
  };

  return (request) => {
    const answer = queue.then(() => ask(request));
    queue = answer.catch(() => undefined);
    return answer;
  };
}
