import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { JsonSchema, ToolSchema } from './schema.js';

/** What a tool does to the world; approval policies and resume decisions key on it. */
export type Effect = 'read' | 'write' | 'destructive' | 'exec' | 'network';

/** Kinds the stores index; tools may use their own kinds too. */
export type ArtifactKind = 'stdout' | 'stderr' | 'diagnostics' | 'result' | 'step_context' | (string & {});

export interface Artifact {
  readonly kind: ArtifactKind;
  readonly content: string;
  readonly name?: string;
  readonly mediaType?: string;
  /** True when the tool capped the content; the tool's output says by how much. */
  readonly truncated?: boolean;
}

export type ToolLogger = (
  level: 'debug' | 'info' | 'warn' | 'error',
  message: string,
  data?: Record<string, unknown>,
) => void;

/** Everything a tool gets besides its input. */
export interface ToolContext {
  /** Aborted on timeout, on cancel, and when a critical sibling fails. Honour it. */
  readonly signal: AbortSignal;
  /** The workspace root the host configured (absolute), if any. */
  readonly workspace: string | undefined;
  readonly runId: string;
  readonly stepId: string;
  readonly executionId: string;
  /**
   * The same for every attempt of one effect: a plan step's calls get a hash of the run, the step and
   * the plan's revision (not the attempt), so a retry after a timeout or a resume after a crash asks
   * for the same effect with the same key. Key the effect by it (a unique key, an idempotency header)
   * to perform it once. A call without a plan step of its own (a goal step's model-chosen call) gets
   * its `executionId`.
   */
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly log: ToolLogger;
  /** Records an artifact (stdout, stderr, diagnostics…) with the execution. */
  addArtifact(artifact: Artifact): void;
  /** Reports progress of a long tool (0–100); journaled as a `progress-report` event. */
  progress(percent: number, message?: string): void;
  /**
   * Shows a piece of the tool's output while it runs (a command's stdout or stderr as it arrives):
   * delivered to the run's live listeners, redacted, and not journaled — return the whole output
   * as usual. Costs nothing while nobody listens. Absent outside the kernel. Once the call has
   * ended it shows nothing more; a stream other than `stdout` or `stderr`, or text that is not a
   * string, throws E004.
   */
  output?(stream: 'stdout' | 'stderr', text: string): void;
  /**
   * Journals a process group the tool started (`process-start`), durably, so that resume can
   * kill it if the host dies while it runs. Absent outside the kernel.
   */
  recordProcess?(process: ProcessRecord): Promise<void>;
}

/** A child process group a tool started; what resume needs to find it again and kill it. */
export interface ProcessRecord {
  /** The leader's pid. */
  readonly pid: number;
  /** The process group id (the leader's pid when it was started detached). */
  readonly processGroup: number;
  /** argv, for the audit trail. */
  readonly command?: readonly string[];
}

/** What a call holds while its tool runs (a slot of a cluster-wide limit); see `ToolDefinition.acquire`. */
export interface ToolClaim {
  /** Frees what was acquired: called once, when the call has settled or when it does not start after all. */
  release(): Promise<void> | void;
}

/** What `ToolDefinition.acquire` gets: the call it is for, and the signal that ends its wait. */
export interface ToolClaimContext {
  /** The run's signal: aborted when the run stops or loses its lease. Stop waiting then. */
  readonly signal: AbortSignal;
  readonly runId: string;
  readonly stepId: string;
  readonly executionId: string;
  /** The run's lease time-to-live (ms), when it runs under a lease: how long a claim should outlive a dead holder. */
  readonly leaseTtlMs: number | undefined;
}

/** What `ToolDefinition.reconcile` gets: the call whose outcome a crash left unknown. */
export interface ReconcileContext<Input = unknown> {
  /** The call's input, as journaled with its `tool-call` (secrets redacted). */
  readonly input: Input;
  /** The run's signal: aborted when the run stops or loses its lease. */
  readonly signal: AbortSignal;
  readonly runId: string;
  readonly stepId: string;
  /** The interrupted call's execution id. */
  readonly executionId: string;
  /** The key the interrupted call was given (`ToolContext.idempotencyKey`): look the effect up by it. */
  readonly idempotencyKey: string;
  /** The interrupted call's attempt. */
  readonly attempt: number;
  readonly log: ToolLogger;
}

/**
 * A tool's answer about a call whose outcome is unknown: `done` (the effect happened; `output` is the
 * call's output, and the step succeeds with it), `not-done` (nothing happened; the step runs again),
 * or `unknown` (the step fails as interrupted, E309, as without `reconcile`).
 */
export type Reconciliation<Output = unknown> =
  | { readonly status: 'done'; readonly output: Output }
  | { readonly status: 'not-done' }
  | { readonly status: 'unknown'; readonly reason?: string };

export interface ToolDefinition<Input = unknown, Output = unknown> {
  /** Unique within a registry; what plans name in `step.tool`. */
  readonly name: string;
  readonly description: string;
  readonly input: ToolSchema<Input>;
  /** When present, output is validated; failures give E305. */
  readonly output?: ToolSchema<Output>;
  readonly effect: Effect;
  /** May a call that crashed mid-way run again on resume? Default: true for `read`, else false. */
  readonly idempotent: boolean;
  /** Default timeout for this tool when the step gives none. */
  readonly timeoutMs?: number;
  /**
   * Waits for what a call needs before it may start (a slot of a cluster-wide limit) and returns
   * what frees it. The kernel calls it once the call is admitted (arguments, preconditions,
   * approval) and before the call is journaled, then checks the run's lease again: a run that stops
   * or loses its lease while waiting journals no call, so resume runs the step again instead of
   * failing it as interrupted. The step's timeout starts after it. A throw fails the call (its
   * code and `retryable` kept) without starting the tool.
   */
  acquire?(context: ToolClaimContext): Promise<ToolClaim>;
  /**
   * Asked on resume about a call of a non-idempotent tool that a crash left in flight (its
   * `tool-call` journaled, no result): did its effect happen? Look it up by `idempotencyKey`.
   * `done` ends the step `succeeded` with the output given (validated like `execute`'s, journaled as a
   * reconciled `tool-result`); `not-done` runs the step again (a new attempt, the same key);
   * `unknown`, a throw, or no `reconcile` at all fail it as interrupted (E309).
   */
  reconcile?(context: ReconcileContext<Input>): Promise<Reconciliation<Output>> | Reconciliation<Output>;
  execute(input: Input, context: ToolContext): Promise<Output> | Output;
}

type InferSchema<S> = S extends StandardSchemaV1<unknown, infer T> ? T : unknown;

export interface ToolOptions<InputSchema, OutputSchema> {
  readonly name: string;
  readonly description: string;
  readonly input: InputSchema;
  readonly output?: OutputSchema;
  readonly effect: Effect;
  readonly idempotent?: boolean;
  readonly timeoutMs?: number;
  /** See `ToolDefinition.acquire`. */
  acquire?(context: ToolClaimContext): Promise<ToolClaim>;
  /** See `ToolDefinition.reconcile`. */
  reconcile?(
    context: ReconcileContext<InferSchema<InputSchema>>,
  ): Promise<Reconciliation<InferSchema<OutputSchema>>> | Reconciliation<InferSchema<OutputSchema>>;
  execute(
    input: InferSchema<InputSchema>,
    context: ToolContext,
  ): Promise<InferSchema<OutputSchema>> | InferSchema<OutputSchema>;
}

const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;

/** Declares a tool. Input and output types are inferred from Standard Schemas (zod 4). */
export function defineTool<
  InputSchema extends StandardSchemaV1 | JsonSchema,
  OutputSchema extends StandardSchemaV1 | JsonSchema = JsonSchema,
>(
  options: ToolOptions<InputSchema, OutputSchema>,
): ToolDefinition<InferSchema<InputSchema>, InferSchema<OutputSchema>> {
  if (!TOOL_NAME.test(options.name)) {
    throw new TypeError(`invalid tool name "${options.name}": use letters, digits, "_", "." or "-" (max 128)`);
  }
  return {
    ...options,
    idempotent: options.idempotent ?? options.effect === 'read',
  } as ToolDefinition<InferSchema<InputSchema>, InferSchema<OutputSchema>>;
}
