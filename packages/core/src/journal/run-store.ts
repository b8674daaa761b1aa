import type { StepError } from '../errors.js';
import type { PlanAuthorization } from '../plan/plan-digest.js';
import type { Artifact, Effect } from '../tools/define-tool.js';
import type { RunEvent, RunStatus, TokenUsage } from './events.js';

/** Exclusive right to write a run's journal, fenced by a token that grows on every acquisition. */
export interface Lease {
  readonly runId: string;
  readonly owner: string;
  readonly token: number;
  /** How long each acquisition or renewal lasts. */
  readonly ttlMs: number;
  /** ISO time after which another owner may take the run. */
  readonly expiresAt: string;
  /**
   * A request to cancel the run, recorded through `RunStore.requestCancel` and not yet ended by a
   * `run-end`: a store that records them returns it with every acquisition and renewal, so the
   * holder (or whoever takes the run over) cancels it. Absent when none is pending.
   */
  readonly cancelRequest?: CancelRequest;
}

/**
 * The tail of a running call's live output (`ctx.output`: a command's stdout or stderr), as the
 * process running it last published it to the store: already redacted, at most
 * `LIVE_OUTPUT_TAIL_CHARS` characters, never part of the journal. One per call and stream.
 */
export interface LiveOutputTail {
  readonly runId: string;
  readonly stepId: string;
  readonly executionId: string;
  readonly stream: 'stdout' | 'stderr';
  /** The last characters written (the whole output so far when it is shorter). */
  readonly text: string;
  /** How many characters the call wrote to this stream in all (`text` is the end of them). */
  readonly total: number;
  /** ISO time of the publication. */
  readonly at: string;
}

/** Who asked to cancel a run, why and when; recorded in the store until the run's `run-end`. */
export interface CancelRequest {
  /** Who asked (a person, a service): journaled on the run's `run-end`. */
  readonly by: string;
  readonly reason?: string;
  /** ISO time of the request. */
  readonly at: string;
}

export type RunState = 'running' | RunStatus;

export interface RunSummary {
  readonly runId: string;
  readonly planId: string;
  readonly planDigest: string;
  readonly engine: string;
  readonly goal: string | undefined;
  readonly status: RunState;
  readonly parentRunId: string | undefined;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt: string | undefined;
  readonly lastSeq: number;
  readonly stepCount: number;
  /** Steps by status (`succeeded`, `failed`, `running`…). */
  readonly stepCounts: Readonly<Record<string, number>>;
  readonly usage: TokenUsage | undefined;
}

export interface RunFilter {
  readonly status?: RunState | readonly RunState[];
  readonly planId?: string;
  /** Runs created at or after this ISO time. */
  readonly since?: string;
  /** Runs created before this ISO time. */
  readonly until?: string;
  /**
   * Words a run must all contain, in any case, in its goal, plan id or run id (split on whitespace;
   * empty matches every run). Stores apply it themselves, so a search pages like any list.
   */
  readonly search?: string;
  /** Newest first; default 100. */
  readonly limit?: number;
  readonly offset?: number;
}

/** The words of `RunFilter.search`, lower-cased (by JavaScript's rules, as MemoryStore compares them). */
export function searchWords(search: string | undefined): string[] {
  return (search ?? '').toLowerCase().split(/\s+/).filter(Boolean);
}

export interface ApprovalRecord {
  readonly executionId: string;
  readonly stepId: string;
  readonly decision: 'approved' | 'denied' | 'skipped';
  readonly source: 'handler' | 'policy' | 'fallback';
  readonly by: string | undefined;
  readonly reason: string | undefined;
  readonly at: string;
}

/** The audit bundle: what ran, when, whether it worked, what it produced, and why. */
export interface ExecutionRecord {
  readonly executionId: string;
  readonly runId: string;
  readonly stepId: string;
  readonly attempt: number;
  readonly turn: number | undefined;
  readonly tool: string;
  readonly effect: Effect;
  /** Redacted. */
  readonly args: Record<string, unknown>;
  readonly startedAt: string;
  readonly finishedAt: string | undefined;
  readonly status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  readonly durationMs: number | undefined;
  readonly exitCode: number | undefined;
  readonly error: StepError | undefined;
  readonly output: unknown;
  readonly artifacts: readonly Artifact[];
  readonly why: {
    readonly planId: string;
    readonly planDigest: string;
    readonly goal: string | undefined;
    readonly stepDescription: string | undefined;
    readonly authorization: PlanAuthorization | undefined;
    readonly approvals: readonly ApprovalRecord[];
  };
}

/**
 * Where runs are journaled. The journal (events) is the source of truth; everything else
 * is a projection of it. Implementations: MemoryStore (core/testing), SQLite (store-sqlite).
 */
export interface RunStore {
  /**
   * Appends a batch atomically and durably. `events[0].seq` must be the run's last seq + 1 and
   * the batch gap-free (else E502). With a lease, its token must be current (else E501);
   * without one, the run must not be leased by anyone.
   */
  append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void>;
  /** Events in seq order, after `afterSeq` (default 0: all). */
  read(runId: string, afterSeq?: number): AsyncIterable<RunEvent>;
  getRun(runId: string): Promise<RunSummary | undefined>;
  listRuns(filter?: RunFilter): Promise<RunSummary[]>;
  getExecution(executionId: string): Promise<ExecutionRecord | undefined>;
  /** Takes the run for `owner` unless another owner holds an unexpired lease (then `undefined`). */
  acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease | undefined>;
  /** Extends the lease; throws E501 once another owner took the run. */
  renewLease(lease: Lease): Promise<Lease>;
  releaseLease(lease: Lease): Promise<void>;
  /**
   * Optional: records a request to cancel a run another process holds. Returns false, recording
   * nothing, when the run is not running (it ended, waits for an answer, or is unknown). The request
   * lasts until a `run-end` of the run is appended (the store then forgets it), and every lease on
   * the run carries it meanwhile (`Lease.cancelRequest`). A second request replaces the first.
   * A store without it still works: `cancelRun` then cancels only runs no live lease holds.
   */
  requestCancel?(runId: string, request: CancelRequest): Promise<boolean>;
  /**
   * Optional: keeps the live output tail of a running call (replacing the one of the same call and
   * stream), outside the journal, so other processes can show it while the step runs. A store
   * forgets a run's tails when its `run-end` is appended; `clearLiveOutput` forgets a call's.
   */
  writeLiveOutput?(tail: LiveOutputTail): Promise<void>;
  /** Optional: the live output tails a run's calls published and have not cleared, oldest first. */
  readLiveOutput?(runId: string): Promise<LiveOutputTail[]>;
  /** Optional: forgets a call's tails (its step ended: the output is in the journal). */
  clearLiveOutput?(runId: string, executionId: string): Promise<void>;
  close(): Promise<void>;
}

/** Reads a whole journal into an array (tests, resume). */
export async function readAll(store: RunStore, runId: string, afterSeq = 0): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of store.read(runId, afterSeq)) events.push(event);
  return events;
}
