import type { Plan, Step } from '@stepwise/core';
import type { KernelContext, ToolCallOutcome } from '@stepwise/core/engine';
import type { ApprovalRecord, ExecutionState, ModelCallEvent, QuestionRecord } from '@stepwise/core/store';
import type { ChatModel } from './chat-model.js';
import type { ExpectationChecker } from './expectations.js';
import type { ModelRetryOptions } from './generate-with-retry.js';
import type { TokenEstimator } from './token-estimator.js';

/** The loop's limits, resolved (see `AgenticLimits` for their meaning and defaults). */
export interface ResolvedLimits {
  readonly maxTurns: number;
  readonly maxConsecutiveToolCalls: number;
  readonly maxToolFailures: number;
  readonly tokenBudget: number | undefined;
  readonly maxContextTokens: number;
  readonly maxToolResultTokens: number;
}

/** The registered tool `command_succeeds` runs through (the only way a criterion runs a command). */
export interface CommandToolOptions {
  readonly tool: string;
  readonly args: (argv: readonly string[]) => Record<string, unknown>;
}

export interface LoopSettings {
  readonly model: ChatModel;
  readonly limits: ResolvedLimits;
  readonly retry: Required<ModelRetryOptions>;
  readonly systemPrompt: string;
  readonly modelTimeoutMs: number | undefined;
  readonly estimator: TokenEstimator;
  readonly random: () => number;
  readonly expectations: Readonly<Record<string, ExpectationChecker>>;
  readonly commandTool: CommandToolOptions;
  readonly allowRerunInterrupted: boolean;
  /** Whether BLOCKED and the loop limits (turns, tool failures) ask a person instead of failing the step. */
  readonly ask: { readonly blocked: boolean; readonly limits: boolean };
}

/** What the journal says about a step that was in flight: the turns to replay instead of repeating. */
export interface StepReplay {
  /** The step's successful model calls, in turn order. */
  readonly modelCalls: readonly ModelCallEvent[];
  readonly executions: ReadonlyMap<string, ExecutionState>;
  readonly approvals: readonly ApprovalRecord[];
  readonly startedAt: string;
  /** Questions this attempt asked a person, oldest first, with their answers. */
  readonly questions: readonly QuestionRecord[];
}

export interface GoalStepContext {
  readonly plan: Plan;
  readonly step: Step;
  /** Index of the step in the plan, for error locations. */
  readonly stepIndex: number;
  readonly attempt: number;
  /** The kernel context; its signal is the step's (cancel, critical sibling, step timeout). */
  readonly kernel: KernelContext;
  readonly settings: LoopSettings;
  readonly dependencies: readonly { readonly stepId: string; readonly output: unknown }[];
  readonly replay?: StepReplay;
  /** The attempt's outcome, given: the model loop does not run (see `GoalAttemptHooks.begin`). */
  readonly given?: Pick<ToolCallOutcome, 'status' | 'output' | 'error'>;
  /** Turns the loop's outcome into the attempt's, before `step-end` (see `GoalAttemptHooks.end`). */
  readonly settle?: (
    outcome: Pick<ToolCallOutcome, 'status' | 'output' | 'error'>,
  ) => Promise<Pick<ToolCallOutcome, 'status' | 'output' | 'error'>>;
}
