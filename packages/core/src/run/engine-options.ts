import type { RunEvent } from '../journal/events.js';
import type { Durability } from '../journal/journal.js';
import type { JournalKey } from '../journal/journal-chain.js';
import type { Redactor } from '../journal/redact.js';
import type { RunStore } from '../journal/run-store.js';
import type { ApprovalOptions } from '../kernel/approval.js';
import type { PlanAuthorization } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import type { PlanValidation } from '../plan/validate-plan.js';
import type { ToolLogger } from '../tools/define-tool.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { RunHandle } from './run-handle.js';

/** Options every engine factory accepts (each engine adds its own). */
export interface EngineOptions {
  /** The whitelist. */
  readonly tools: ToolRegistry;
  /** Where the journal goes. Default: a new MemoryStore. */
  readonly store?: RunStore;
  /** Absolute workspace root handed to tools and precondition checkers. */
  readonly workspace?: string;
  readonly approvals?: ApprovalOptions;
  /** Redacts events before they reach the store or listeners. Default: built-in token formats. */
  readonly redactor?: Redactor;
  /** Lease owner name; default unique per process and run. */
  readonly owner?: string;
  /**
   * `'batched'` lets the end of a succeeded step whose tool is idempotent commit together with later
   * work instead of on its own, so chains and fan-outs of such steps share commits; a crash can then
   * run those steps again. Non-idempotent tools are unaffected. Default `'step'` (see `Durability`).
   */
  readonly durability?: Durability;
  /**
   * `'referenced'` keeps a step's output in memory only while a step that has not ended may read it
   * (references it, or is a goal step depending on it); the run's result then omits released
   * outputs, which stay in the journal (`store.getExecution(step.executionId)`). Default `'all'`.
   */
  readonly retainOutputs?: RetainOutputs;
  /**
   * Keys every run's hash chain (HMAC-SHA-256), so that someone who can write the store but cannot
   * read the key cannot forge a journal that verifies; a resumed or replayed run is checked with it
   * (E507). At least 16 bytes; keep it outside the workspace. Default: none (plain SHA-256, which
   * catches edits that do not recompute the chain). See `verifyJournal`.
   */
  readonly journalKey?: JournalKey;
  /** Lease time-to-live (renewed while running). Default 30 000 ms. */
  readonly leaseTtlMs?: number;
  /**
   * Publish a running command's output (`ctx.output`, redacted as `handle.onLive` listeners get it)
   * to a store that keeps it (`RunStore.writeLiveOutput`), so a dashboard in another process shows
   * it while the step runs: the last 64 KiB per call and stream, at most one write every 500 ms per
   * call and stream, cleared when the call ends; never journaled. `false` turns it off. Default true.
   */
  readonly liveOutputToStore?: boolean;
  /** Timeout for steps and tools that set none. Default: none. */
  readonly defaultTimeoutMs?: number;
  /** Re-run in-flight non-idempotent steps on resume instead of failing them. Default false. */
  readonly allowRerunInterrupted?: boolean;
  /** Every event, after it is durable. */
  readonly onEvent?: (event: RunEvent) => void;
  readonly log?: ToolLogger;
}

export interface RunOptions {
  /** Required by the sequential engine; optional elsewhere. */
  readonly authorization?: PlanAuthorization;
  /** Default: derived (sequential) or random. */
  readonly runId?: string;
  readonly signal?: AbortSignal;
  readonly onEvent?: (event: RunEvent) => void;
  readonly parentRunId?: string;
}

export interface ResumeOptions {
  readonly signal?: AbortSignal;
  readonly onEvent?: (event: RunEvent) => void;
  /**
   * Continue a run that ended (failed, partial, cancelled): run these steps again as a new attempt.
   * Their dependents that were skipped because of them run too. Journaled as `run-continue`.
   */
  readonly retry?: readonly string[];
  /**
   * Continue a run that ended: these steps end `skipped` (keeping their error) and their dependents
   * run, except those that reference a skipped step's output (skipped with E310).
   */
  readonly skip?: readonly string[];
  /** Journaled with `run-continue`. */
  readonly by?: string;
  readonly reason?: string;
  /**
   * A new approval of the run's current plan (`approvePlan(revisedPlan, …)`): a strict run whose plan
   * was revised without one ended `waiting` and resumes only with it (else E003). Journaled with `run-resume`.
   */
  readonly authorization?: PlanAuthorization;
}

/** What `createRunner` switches between with one word of configuration. */
export interface Engine {
  readonly name: 'sequential' | 'dag' | 'agentic' | (string & {});
  run(plan: Plan, options?: RunOptions): RunHandle;
  resume(runId: string, options?: ResumeOptions): RunHandle;
  validate(plan: unknown): PlanValidation;
}

/**
 * Which step outputs a session keeps in memory. `all` (the default) keeps every output for the
 * run's result. `referenced` keeps the outputs of the plan's last steps (those no step depends on:
 * the run's results) and any other output only while a step that has not ended may read it: a
 * step that references it (`$ref`, `"$id"`), or a goal step that depends on it (its executor is
 * handed its dependencies' outputs). The journal still has every output; a released one that a
 * later step needs after all (a revision added a reference to it) is read back from the store.
 */
export type RetainOutputs = 'all' | 'referenced';
