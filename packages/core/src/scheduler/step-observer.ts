import { messageOf } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import type { KernelContext } from '../kernel/invoke-step.js';
import type { SchedulerObserver } from './engine-policy.js';
import type { Slot } from './step-board.js';

/** Logs a warning about a host's code that threw (a hook, an observer); the run goes on. */
export type Warn = (message: string, error: unknown) => void;

export function warnThrough(log: KernelContext['log']): Warn {
  return (message, error) => log?.('warn', message, { error: messageOf(error) });
}

/** The host's `SchedulerObserver`, called so that a callback that throws is logged and ignored. */
export class StepObserver {
  constructor(
    readonly observer: SchedulerObserver,
    readonly warn: Warn,
  ) {}

  started(slot: Slot): void {
    try {
      this.observer.onStepStart?.(slot.step, slot.index);
    } catch (error) {
      this.warn('onStepStart callback threw; the run continues', error);
    }
  }

  ended(slot: Slot): void {
    try {
      this.observer.onStepEnd?.(slot.result as StepResult, slot.index);
    } catch (error) {
      this.warn('onStepEnd callback threw; the run continues', error);
    }
  }

  /** The host's hold before a step starts (a promise to wait for), or `undefined` when it does not hold. */
  beforeStep(slot: Slot): Promise<void> | undefined {
    return this.observer.beforeStep?.(slot.step, slot.index);
  }
}
