import type { LiveEvent, Plan, RunEvent, StepError } from '@stepwise/core';
import { formatDuration, goalProgressLine } from '@stepwise/dashboard/report';
import { OutputTails } from './output-tail.js';
import { fitWidth, type Palette, padEnd, textWidth } from './terminal.js';

// The escape sequences a frame is drawn with: automatic wrap at the right margin (DECAWM) off and
// on, erase to the end of the line, erase below the cursor.
const WRAP_OFF = '\u001b[?7l';
const WRAP_ON = '\u001b[?7h';
const ERASE_LINE = '\u001b[K';
const ERASE_BELOW = '\u001b[J';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

type ViewStatus =
  | 'pending'
  | 'running'
  | 'awaiting-approval'
  | 'retrying'
  | 'succeeded'
  | 'failed'
  | 'skipped'
  | 'denied'
  | 'cancelled'
  | 'waiting';

interface ViewStep {
  readonly id: string;
  readonly tool: string | undefined;
  status: ViewStatus;
  attempt: number;
  startedAt: number | undefined;
  durationMs: number | undefined;
  retryAt: number | undefined;
  note: string | undefined;
  error: StepError | undefined;
  finishedOrder: number;
}

export interface LiveViewOptions {
  readonly plan: Plan;
  readonly output: NodeJS.WritableStream & { columns?: number; rows?: number };
  readonly palette: Palette;
  readonly engine: string;
  /** Redraw period. Default 80 ms. */
  readonly frameMs?: number;
  /** Clock for tests. Default `Date.now`. */
  readonly now?: () => number;
}

const FINISHED: ReadonlySet<ViewStatus> = new Set(['succeeded', 'failed', 'skipped', 'denied', 'cancelled', 'waiting']);

/**
 * The TTY view of a run: one line per step (spinner and elapsed time while running, then the
 * outcome), a progress bar, redrawn in place. `pause()` clears it so a prompt can use the
 * terminal; `stop()` leaves the final frame on screen.
 */
export class LiveView {
  readonly #options: LiveViewOptions;
  readonly #steps: ViewStep[];
  readonly #byId = new Map<string, ViewStep>();
  readonly #now: () => number;
  readonly #started: number;
  #runId = '';
  #frame = 0;
  #linesOnScreen = 0;
  #timer: NodeJS.Timeout | undefined;
  #finishedCount = 0;
  #runStatus: string | undefined;
  #stopped = false;
  readonly #tails = new OutputTails();

  constructor(options: LiveViewOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#started = this.#now();
    this.#steps = options.plan.steps.map((step) => ({
      id: step.id,
      tool: step.tool,
      status: 'pending',
      attempt: 0,
      startedAt: undefined,
      durationMs: undefined,
      retryAt: undefined,
      note: undefined,
      error: undefined,
      finishedOrder: 0,
    }));
    for (const step of this.#steps) this.#byId.set(step.id, step);
  }

  start(): void {
    this.#write('\u001b[?25l');
    this.#timer = setInterval(() => this.render(), this.#options.frameMs ?? 80);
    this.#timer.unref?.();
    this.render();
  }

  /** Shows the tail of a running step's output (a command's stdout and stderr, a model's answer). */
  live(event: LiveEvent): void {
    if (this.#byId.has(event.stepId)) this.#tails.add(event);
  }

  /** Folds one event into the view. */
  update(event: RunEvent): void {
    if (!this.#runId) this.#runId = event.runId;
    const step = 'stepId' in event ? this.#byId.get(event.stepId) : undefined;
    const at = Date.parse(event.at);
    if (step && (event.type === 'step-start' || event.type === 'step-end')) this.#tails.clear(step.id);
    switch (event.type) {
      case 'step-start':
        if (!step) break;
        step.status = 'running';
        step.attempt = event.attempt;
        step.startedAt = at;
        step.note = undefined;
        step.retryAt = undefined;
        break;
      case 'approval-request':
        if (step) step.status = 'awaiting-approval';
        break;
      case 'approval-decision':
        if (step && step.status === 'awaiting-approval') step.status = 'running';
        if (step && event.decision !== 'approved') step.note = `${event.decision}${event.by ? ` by ${event.by}` : ''}`;
        break;
      case 'tool-call':
        if (step && event.turn !== undefined) step.note = `turn ${event.turn}: ${event.tool}`;
        break;
      case 'goal-progress':
        if (step) step.note = goalProgressLine(event);
        break;
      case 'progress-report':
        if (step) step.note = `${Math.round(event.percent)}%${event.message ? ` ${event.message}` : ''}`;
        break;
      case 'step-retry':
        if (!step) break;
        step.status = 'retrying';
        step.retryAt = this.#now() + event.delayMs;
        step.error = event.error;
        break;
      case 'step-end':
        if (!step) break;
        if (!FINISHED.has(step.status)) this.#finishedCount += 1;
        step.status = event.result.status;
        step.durationMs = event.result.durationMs;
        step.error = event.result.error;
        step.finishedOrder = this.#finishedCount;
        break;
      case 'run-resume':
        for (const interrupted of event.interrupted) {
          const target = this.#byId.get(interrupted.stepId);
          if (target) target.note = `interrupted: ${interrupted.action}`;
        }
        break;
      case 'run-continue':
        // The run ended before and goes on as the same run: its earlier end no longer stands.
        this.#runStatus = undefined;
        for (const stepId of event.retry) {
          const target = this.#byId.get(stepId);
          if (target) target.note = 'retried';
        }
        break;
      case 'run-end':
        this.#runStatus = event.status;
        break;
      default:
        break;
    }
  }

  /** Clears the view from the screen (for a prompt); the next `render()` draws it again. */
  pause(): void {
    this.#clear();
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  resume(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setInterval(() => this.render(), this.#options.frameMs ?? 80);
    this.#timer.unref?.();
    this.render();
  }

  /** Draws the final frame and leaves it; shows the cursor again. */
  stop(): void {
    if (this.#stopped) return;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.render();
    this.#stopped = true;
    this.#linesOnScreen = 0;
    this.#write('\u001b[?25h');
  }

  #write(text: string): void {
    try {
      this.#options.output.write(text);
    } catch {
      // A closed terminal must not break the run.
    }
  }

  #clear(): void {
    if (this.#linesOnScreen > 0) this.#write(`\u001b[${this.#linesOnScreen}A\r\u001b[0J`);
    this.#linesOnScreen = 0;
  }

  render(): void {
    if (this.#stopped) return;
    const lines = this.frame();
    // Each line is written over the last frame's and erased to its end, then whatever is left below:
    // one write, no blank screen between frames, and no clear of the whole screen (which tmux keeps
    // in its scrollback). Lines are fitted to the width, yet terminals disagree on some emoji: with
    // automatic wrap off, a line a terminal finds wider is clipped instead of taking a second row
    // that the next frame would not move back over.
    const back = this.#linesOnScreen > 0 ? `\u001b[${this.#linesOnScreen}A\r` : '';
    this.#write(`${back}${WRAP_OFF}${lines.join(`${ERASE_LINE}\n`)}${ERASE_LINE}\n${ERASE_BELOW}${WRAP_ON}`);
    this.#linesOnScreen = lines.length;
  }

  /** The current frame as lines (no cursor movement). */
  frame(): string[] {
    const { palette, plan } = this.#options;
    const columns = Math.max(40, (this.#options.output.columns ?? 100) - 1);
    const rows = Math.max(8, this.#options.output.rows ?? 40);
    const now = this.#now();
    this.#frame += 1;
    const lines: string[] = [];
    lines.push(
      fitWidth(
        `${palette.bold('stepwise')} ${palette.gray('·')} ${plan.id} ${palette.gray('·')} ${this.#options.engine} engine${this.#runId ? ` ${palette.gray('·')} ${palette.gray(this.#runId)}` : ''}`,
        columns,
      ),
    );
    if (plan.goal) lines.push(fitWidth(palette.gray(plan.goal), columns));

    const idWidth = Math.min(28, Math.max(...this.#steps.map((step) => textWidth(step.id)), 4));
    const toolWidth = Math.min(18, Math.max(...this.#steps.map((step) => textWidth(step.tool ?? 'agentic')), 4));
    // Output tails take the rows the step lines leave: at most a third of the screen.
    const tails = new Map<string, string[]>();
    let tailRows = 0;
    for (const step of this.#steps) {
      if (step.status !== 'running') continue;
      const tail = this.#tails.lines(step.id);
      tails.set(step.id, tail);
      tailRows += tail.length;
    }
    tailRows = Math.min(Math.floor(rows / 3), tailRows);
    const budget = rows - lines.length - 3 - tailRows;
    const visible = this.#visibleSteps(budget);
    let tailLeft = tailRows;
    for (const step of visible) {
      lines.push(fitWidth(this.#stepLine(step, idWidth, toolWidth, now), columns));
      for (const line of tails.get(step.id) ?? []) {
        if (tailLeft <= 0) break;
        tailLeft -= 1;
        lines.push(fitWidth(`      ${palette.gray('│')} ${palette.gray(line)}`, columns));
      }
    }
    const hidden = this.#steps.length - visible.length;
    if (hidden > 0) lines.push(palette.gray(`  … ${hidden} more step${hidden === 1 ? '' : 's'}`));
    lines.push(fitWidth(this.#progressLine(now, columns), columns));
    return lines;
  }

  #visibleSteps(budget: number): ViewStep[] {
    if (this.#steps.length <= budget) return this.#steps;
    // Active steps first, then the most recently finished, then the next pending ones; shown in plan order.
    const active = this.#steps.filter((step) => !FINISHED.has(step.status) && step.status !== 'pending');
    const finished = this.#steps
      .filter((step) => FINISHED.has(step.status))
      .sort((a, b) => b.finishedOrder - a.finishedOrder);
    const pending = this.#steps.filter((step) => step.status === 'pending');
    const chosen = new Set<ViewStep>([...active, ...finished, ...pending].slice(0, Math.max(1, budget - 1)));
    return this.#steps.filter((step) => chosen.has(step));
  }

  #stepLine(step: ViewStep, idWidth: number, toolWidth: number, now: number): string {
    const { palette } = this.#options;
    const spinner = SPINNER[this.#frame % SPINNER.length] as string;
    const icons: Record<ViewStatus, string> = {
      pending: palette.gray('·'),
      running: palette.cyan(spinner),
      'awaiting-approval': palette.yellow('?'),
      retrying: palette.magenta('↻'),
      succeeded: palette.green('✓'),
      failed: palette.red('✗'),
      skipped: palette.gray('↷'),
      denied: palette.yellow('⊘'),
      cancelled: palette.gray('■'),
      waiting: palette.cyan('⏸'),
    };
    let time = '';
    let detail = '';
    switch (step.status) {
      case 'running':
        time = step.startedAt ? formatDuration(now - step.startedAt) : '';
        if (step.attempt > 1) detail = palette.magenta(`attempt ${step.attempt}`);
        break;
      case 'awaiting-approval':
        detail = palette.yellow('awaiting approval');
        break;
      case 'retrying':
        detail = palette.magenta(
          `retrying in ${formatDuration(Math.max(0, (step.retryAt ?? now) - now))} (after ${step.error?.code ?? 'error'})`,
        );
        break;
      case 'pending':
        break;
      case 'waiting':
        detail = palette.cyan('waiting for a person: stepwise pending, stepwise respond');
        break;
      default:
        time = step.durationMs === undefined ? '' : formatDuration(step.durationMs);
        if (step.error && step.status !== 'succeeded') {
          const colour = step.status === 'failed' ? palette.red : palette.gray;
          detail = colour(`${step.error.code} ${step.error.message.split('\n')[0]}`);
        }
    }
    if (!detail && step.note) detail = palette.gray(step.note);
    const id = step.status === 'pending' ? palette.gray(step.id) : step.id;
    return `  ${icons[step.status]} ${padEnd(id, idWidth)}  ${palette.gray(padEnd(step.tool ?? 'agentic', toolWidth))}  ${padEnd(time, 7)} ${detail}`;
  }

  #progressLine(now: number, columns: number): string {
    const { palette } = this.#options;
    const total = this.#steps.length;
    const done = this.#steps.filter((step) => FINISHED.has(step.status)).length;
    const running = this.#steps.filter(
      (step) => step.status === 'running' || step.status === 'awaiting-approval' || step.status === 'retrying',
    ).length;
    const failed = this.#steps.filter((step) => step.status === 'failed' || step.status === 'denied').length;
    const width = Math.max(10, Math.min(30, columns - 50));
    const filled = total === 0 ? width : Math.round((done / total) * width);
    const bar = `${palette.green('█'.repeat(filled))}${palette.gray('░'.repeat(width - filled))}`;
    const parts = [`${done}/${total} steps`];
    if (running > 0) parts.push(`${running} running`);
    if (failed > 0) parts.push(palette.red(`${failed} failed`));
    parts.push(formatDuration(now - this.#started));
    if (this.#runStatus) parts.push(palette.bold(this.#runStatus));
    return `  ${bar} ${parts.join(palette.gray(' · '))}`;
  }
}
