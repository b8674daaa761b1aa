import type { StepError } from '../errors.js';
import type { PlanDiff } from '../plan/plan-diff.js';
import type { PlanAuthorization } from '../plan/plan-digest.js';
import type { Plan, Step } from '../plan/plan-schema.js';
import type { Artifact, Effect } from '../tools/define-tool.js';
import type { OrphanedProcesses, RecordedProcess } from '../tools/process-groups.js';
import type { ChainAlgorithm } from './journal-chain.js';

/**
 * `waiting`: the step asked a person (an approval in `pause` mode) and did not run; the run ends
 * `waiting`, and after `respond()` a resume runs the step again with the answer.
 */
export type StepStatus = 'succeeded' | 'failed' | 'skipped' | 'denied' | 'cancelled' | 'waiting';
/** `waiting`: the run stopped for a person's answer (an approval in `pause` mode); `respond`, then `resume`. */
export type RunStatus = 'completed' | 'failed' | 'partial' | 'cancelled' | 'waiting';

export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
}

/** The outcome of one step (its last attempt). */
export interface StepResult {
  readonly stepId: string;
  readonly tool: string | undefined;
  readonly status: StepStatus;
  readonly output?: unknown;
  readonly error?: StepError;
  readonly executionId: string;
  readonly attempt: number;
  /** ISO time the attempt started. */
  readonly startedAt: string;
  readonly durationMs: number;
  readonly artifacts?: readonly Artifact[];
  /** Agentic steps: tokens spent on the model. */
  readonly usage?: TokenUsage;
}

export interface RunResult {
  readonly runId: string;
  readonly planId: string;
  readonly planDigest: string;
  readonly engine: string;
  readonly status: RunStatus;
  /** Results of attempted steps, in plan order. */
  readonly steps: readonly StepResult[];
  readonly durationMs: number;
  readonly usage?: TokenUsage;
  /** The plan as the run ended, when it was revised while it ran (`planDigest` is this plan's). */
  readonly plan?: Plan;
  /** Every revision of the plan during the run, oldest first; absent when the plan was never revised. */
  readonly revisions?: readonly PlanReviseEvent[];
}

/** The fields every event has; an extension event's interface extends it (see `RunEventExtensions`). */
export interface RunEventBase {
  readonly runId: string;
  /** 1, 2, 3… per run, without gaps. */
  readonly seq: number;
  /** ISO 8601 time the event was journaled. */
  readonly at: string;
  /**
   * The event's link in the run's hash chain (format 2): a digest of the previous event's value and
   * this event's canonical JSON without `chain` (see `verifyJournal`). Stamped by `RunJournal` as
   * the event is appended; absent in journals written before chains existed.
   */
  readonly chain?: string;
}

export interface RunStartEvent extends RunEventBase {
  readonly type: 'run-start';
  /**
   * The journal's format (`JOURNAL_VERSION` when it was written); absent in journals written before
   * formats were numbered, which are format 1. The fold refuses a format it does not know (E506).
   */
  readonly journalVersion?: number;
  /** How the run's chain values are computed (`hmac-sha-256` when a journal key was configured); absent in unchained journals. */
  readonly chainAlgorithm?: ChainAlgorithm;
  readonly planId: string;
  readonly planDigest: string;
  readonly plan: Plan;
  readonly engine: string;
  readonly authorization?: PlanAuthorization;
  readonly parentRunId?: string;
  /** Engine options that resume must reuse (concurrency, limits). */
  readonly options?: Record<string, unknown>;
}

export interface RunResumeEvent extends RunEventBase {
  readonly type: 'run-resume';
  readonly owner: string;
  /** Steps the fold found in flight, and what resume does with each. */
  readonly interrupted: readonly {
    stepId: string;
    action: 'rerun' | 'fail' | 'finish' | 'reconcile';
  }[];
  /** A new approval the resume was given (the strict engine, after an unapproved plan revision). */
  readonly authorization?: PlanAuthorization;
}

/**
 * A run that ended (failed, partial, cancelled, waiting) continues as the same run: the named steps
 * are retried (a new attempt) or skipped (they end `skipped`, their dependents may run); steps that
 * ended only because of the stop (cancelled, or skipped behind a dependency) become pending again.
 */
export interface RunContinueEvent extends RunEventBase {
  readonly type: 'run-continue';
  /** The run's status before it continued (`running`: a crashed run). */
  readonly from: RunStatus | 'running';
  readonly retry: readonly string[];
  readonly skip: readonly string[];
  readonly by?: string;
  readonly reason?: string;
}

export interface StepStartEvent extends RunEventBase {
  readonly type: 'step-start';
  readonly stepId: string;
  readonly tool: string | undefined;
  readonly attempt: number;
  readonly executionId: string;
}

export interface ApprovalRequestEvent extends RunEventBase {
  readonly type: 'approval-request';
  readonly stepId: string;
  readonly executionId: string;
  readonly tool: string;
  readonly effect: Effect;
  readonly args: Record<string, unknown>;
  readonly reason: 'step' | 'policy';
}

export interface ApprovalDecisionEvent extends RunEventBase {
  readonly type: 'approval-decision';
  readonly stepId: string;
  readonly executionId: string;
  readonly tool: string;
  readonly decision: 'approved' | 'denied' | 'skipped';
  /** `handler`: a person or service answered; `policy`: the effect policy; `fallback`: no handler. */
  readonly source: 'handler' | 'policy' | 'fallback';
  readonly by?: string;
  readonly reason?: string;
}

/**
 * A person's answer to an approval request of a `waiting` run, journaled by `respond()` under the
 * run's lease. The resumed run applies it when the step runs again (`edit`: with these args).
 */
export interface ApprovalResponseEvent extends RunEventBase {
  readonly type: 'approval-response';
  readonly stepId: string;
  /** The request answered (its `executionId`, which is the request id). */
  readonly requestId: string;
  /** `answer`: the reply to a goal step's question (`question-ask`), in `answer`. */
  readonly decision: 'approve' | 'deny' | 'skip' | 'edit' | 'answer';
  readonly args?: Record<string, unknown>;
  /** The person's reply to a question; the resumed goal step hands it to the model as the next message. */
  readonly answer?: string;
  readonly by: string;
  readonly reason?: string;
}

export interface ToolCallEvent extends RunEventBase {
  readonly type: 'tool-call';
  readonly stepId: string;
  readonly executionId: string;
  readonly attempt: number;
  readonly tool: string;
  readonly effect: Effect;
  readonly idempotent: boolean;
  readonly args: Record<string, unknown>;
  /** Agentic: the model turn that asked for this call. */
  readonly turn?: number;
  /** Agentic: the model's own id for this call (its tool message answers it); `executionId` is Stepwise's. */
  readonly toolCallId?: string;
}

export interface ToolResultEvent extends RunEventBase {
  readonly type: 'tool-result';
  readonly stepId: string;
  readonly executionId: string;
  readonly tool: string;
  readonly status: 'succeeded' | 'failed' | 'cancelled';
  readonly output?: unknown;
  readonly error?: StepError;
  readonly artifacts?: readonly Artifact[];
  readonly startedAt: string;
  readonly durationMs: number;
  /**
   * The result of a call a crash left in flight, as the tool's `reconcile` answered it on resume
   * (the effect had happened), not as its `execute` returned it.
   */
  readonly reconciled?: true;
}

export interface StepRetryEvent extends RunEventBase {
  readonly type: 'step-retry';
  readonly stepId: string;
  /** The attempt that failed. */
  readonly attempt: number;
  readonly nextAttempt: number;
  readonly delayMs: number;
  readonly error: StepError;
}

export interface RecoveryDecisionEvent extends RunEventBase {
  readonly type: 'recovery-decision';
  readonly stepId: string;
  readonly attempt: number;
  readonly decision: 'retry' | 'skip' | 'abort' | 'insert';
  readonly args?: Record<string, unknown>;
  /** `insert`: the steps inserted before the failed step, and what then happens to it. */
  readonly steps?: readonly Step[];
  readonly afterwards?: 'retry' | 'skip';
  readonly reason?: string;
  /** `insert`: why the steps could not be inserted (the default failure policy applied instead). */
  readonly error?: StepError;
}

/**
 * The adjust hook's decision after a step ended: go on, revise the pending part of the plan
 * (a `plan-revise` follows), or stop the run. `error` says why a decision could not be taken or
 * applied (the hook threw, its answer was not a decision, the revision was refused); the run then
 * went on unrevised.
 */
export interface AdjustDecisionEvent extends RunEventBase {
  readonly type: 'adjust-decision';
  readonly stepId: string;
  readonly attempt: number;
  /** The step's status when the hook was asked. */
  readonly status: StepStatus;
  readonly decision: 'continue' | 'revise' | 'stop';
  readonly reason?: string;
  /** The revision the hook asked for. */
  readonly edits?: readonly unknown[];
  readonly error?: StepError;
}

export interface ProgressReportEvent extends RunEventBase {
  readonly type: 'progress-report';
  readonly stepId: string;
  readonly executionId: string;
  readonly percent: number;
  readonly message?: string;
}

/** A tool started a child process group (commands); resume kills it if it outlived its host. */
export interface ProcessStartEvent extends RunEventBase, RecordedProcess {
  readonly type: 'process-start';
  readonly stepId: string;
  readonly executionId: string;
}

/**
 * Resume found process groups that calls which never ended had started (`process-start`): the
 * groups it killed, and those it left alone because they could not be proven to be the recorded
 * ones (see `ProcessLeftReason`). Journaled before `run-resume`, only when there is either.
 */
export interface ProcessKillEvent extends RunEventBase, OrphanedProcesses {
  readonly type: 'process-kill';
}

export interface ModelCallEvent extends RunEventBase {
  readonly type: 'model-call';
  readonly stepId: string;
  /** The step attempt this turn belongs to. */
  readonly attempt?: number;
  readonly turn: number;
  readonly model: string;
  /** The URL the model was called at, without credentials or query, when the model has one. */
  readonly endpoint?: string;
  readonly request: unknown;
  readonly response?: unknown;
  readonly usage?: TokenUsage;
  readonly latencyMs: number;
  readonly error?: StepError;
}

/** A goal the model works towards, as the model last reported it. */
export interface GoalStatus {
  readonly goal: string;
  readonly status: 'achieved' | 'in_progress' | 'blocked';
  readonly progress?: string;
}

/** A criterion of a goal step's `expect` list, as last checked. */
export interface CriterionStatus {
  /** The criterion in words, as the model reads it. */
  readonly criterion: string;
  /** `unchecked` until the model first claims the step complete. */
  readonly status: 'met' | 'unmet' | 'unchecked';
  /** What is missing, when unmet. */
  readonly message?: string;
}

/**
 * Where a goal step stands after one model turn, journaled every turn (the fold keeps the latest
 * per step): what the model decided and said, the goals it reported, the criteria met so far.
 */
export interface GoalProgressEvent extends RunEventBase {
  readonly type: 'goal-progress';
  readonly stepId: string;
  readonly attempt: number;
  readonly turn: number;
  /** The model's decision this turn: call tools, analyse, claim completion, report the step blocked. */
  readonly decision: 'command' | 'analyze' | 'complete' | 'blocked';
  /** The beginning of the text the model wrote this turn (its analysis), when it wrote any. */
  readonly note?: string;
  /** The goals the model reported most recently (with `complete_step` or `report_blocked`). */
  readonly goals?: readonly GoalStatus[];
  /** Each criterion of the step's `expect` list; empty when the step has none. */
  readonly criteria: readonly CriterionStatus[];
  /** Calls of registered tools the model asked for this turn. */
  readonly toolCalls: number;
  /** Failed tool calls in this step so far. */
  readonly toolFailures: number;
}

/**
 * A goal step asks a person instead of failing (the model reported the step blocked, or a loop
 * limit was reached, and the policy says `ask`): the step ends `waiting`, so does the run. The
 * answer (`respond()` with `answer`) goes to the model as the next message when the run resumes,
 * and the same attempt continues.
 */
export interface QuestionAskEvent extends RunEventBase {
  readonly type: 'question-ask';
  readonly stepId: string;
  /** Answer it with this id (or with the step id). */
  readonly requestId: string;
  readonly attempt: number;
  /** The model turn after which it was asked. */
  readonly turn: number;
  /** Why the step asks: `blocked` (the model's `report_blocked`), `turns` or `tool-failures` (a limit was reached). */
  readonly cause: 'blocked' | 'turns' | 'tool-failures';
  /** What the person is asked: the model's reason, or which limit was reached. */
  readonly question: string;
}

export interface LimitReachEvent extends RunEventBase {
  readonly type: 'limit-reach';
  readonly stepId: string;
  readonly limit: 'turns' | 'tool-failures' | 'token-budget' | 'consecutive-tool-calls';
  readonly value: number;
}

export interface StepEndEvent extends RunEventBase {
  readonly type: 'step-end';
  readonly stepId: string;
  readonly result: StepResult;
}

/** The plan of a running run was revised: from now on `plan` is the plan the run carries out. */
export interface PlanReviseEvent extends RunEventBase {
  readonly type: 'plan-revise';
  /** 1 for the first revision of the run's plan, then 2, 3… (the plan's own `revision`). */
  readonly revision: number;
  /** Digest of the plan this revision replaces: the run's current digest when it was journaled. */
  readonly parentDigest: string;
  /** Digest of `plan`. */
  readonly digest: string;
  readonly diff: PlanDiff;
  readonly plan: Plan;
  /** Who revised it: a person, a policy or a model, e.g. `adjust:model`. */
  readonly by: string;
  readonly reason?: string;
  /** The approval of this revision's digest, when one was given with it (the strict engine needs one). */
  readonly authorization?: PlanAuthorization;
}

export interface RunEndEvent extends RunEventBase {
  readonly type: 'run-end';
  readonly status: RunStatus;
  readonly durationMs: number;
  readonly usage?: TokenUsage;
  /** The plan revision the run ended on, when its plan was revised. */
  readonly revision?: number;
  /** A run cancelled through the store (`cancelRun`): who asked, and why. */
  readonly by?: string;
  readonly reason?: string;
}

/**
 * Events other packages journal, by type. A package adds its own by augmenting this interface:
 * `declare module '@stepwise/core' { interface RunEventExtensions { 'deploy-end': DeployEndEvent } }`,
 * where `DeployEndEvent` extends `RunEventBase` with `type: 'deploy-end'`. Core journals, stores and
 * reads them like its own events; the fold passes over them (the run's last seq and time move).
 * A type must not be one of core's.
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty until a package augments it (declaration merging).
export interface RunEventExtensions {}

/** An event another package journals (see `RunEventExtensions`). */
export type ExtensionEvent = RunEventExtensions[keyof RunEventExtensions];

/** The events core defines, journals and folds. */
export type CoreRunEvent =
  | RunStartEvent
  | RunResumeEvent
  | RunContinueEvent
  | StepStartEvent
  | ApprovalRequestEvent
  | ApprovalDecisionEvent
  | ApprovalResponseEvent
  | ToolCallEvent
  | ToolResultEvent
  | StepRetryEvent
  | RecoveryDecisionEvent
  | AdjustDecisionEvent
  | ProgressReportEvent
  | ProcessStartEvent
  | ProcessKillEvent
  | ModelCallEvent
  | GoalProgressEvent
  | QuestionAskEvent
  | LimitReachEvent
  | StepEndEvent
  | PlanReviseEvent
  | RunEndEvent;

/** Every event a journal may hold: core's, and those other packages registered. */
export type RunEvent = CoreRunEvent | ExtensionEvent;

export type RunEventType = RunEvent['type'];

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event before the journal stamps `runId`, `seq`, `at` and `chain`. */
export type RunEventInput = DistributiveOmit<RunEvent, 'runId' | 'seq' | 'at' | 'chain'>;

/** One JSON line per event (JSONL), as the CLI prints them. */
export function serializeEvent(event: RunEvent): string {
  return JSON.stringify(event);
}
