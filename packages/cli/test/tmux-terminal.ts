import { execFileSync, spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

/** Whether tmux is installed; the terminal tests skip when it is not. */
export const tmuxAvailable = spawnSync('tmux', ['-V']).status === 0;
if (!tmuxAvailable) console.warn('terminal tests skipped: tmux is not installed (apt-get install -y tmux)');

export interface CaptureOptions {
  /** Keep colours and attributes as escape sequences (`capture-pane -e`). */
  readonly escapes?: boolean;
  /** Join lines the terminal wrapped (`capture-pane -J`). Default true. */
  readonly join?: boolean;
}

/**
 * A private tmux server for one test file: each session is a real pseudo-terminal of the size
 * asked for, running a shell command, whose screen (and scrollback) the test reads.
 */
export class TmuxServer {
  readonly #socket: string;

  constructor(name: string) {
    this.#socket = `stepwise-test-${name}-${process.pid}`;
  }

  command(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.#socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  }

  start(session: string, size: { readonly columns: number; readonly rows: number }, command: string): void {
    this.command('new-session', '-d', '-s', session, '-x', String(size.columns), '-y', String(size.rows), command);
  }

  /** The screen and up to 200 lines of scrollback above it. */
  screen(session: string, options: CaptureOptions = {}): string {
    const flags = ['-p', ...(options.join === false ? [] : ['-J']), ...(options.escapes ? ['-e'] : [])];
    return this.command('capture-pane', ...flags, '-t', session, '-S', '-200');
  }

  async waitForScreen(session: string, test: (text: string) => boolean, what: string): Promise<string> {
    const deadline = Date.now() + 20_000;
    let text = '';
    for (;;) {
      text = this.screen(session);
      if (test(text)) return text;
      // Checked after a look, not before: a wait that overslept the deadline still gets its last look.
      if (Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`timed out waiting for ${what}; the screen was:\n${text}`);
  }

  close(): void {
    try {
      this.command('kill-server');
    } catch {
      // No session left.
    }
  }
}

/** Waits for the `EXIT:<code>` line a session's shell writes to `file` once the command ends. */
export async function waitForExitFile(file: string): Promise<number> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const text = await readFile(file, 'utf8').catch(() => '');
    const match = /EXIT:(\d+)/.exec(text);
    if (match) return Number(match[1]);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the command in the terminal did not exit');
}
