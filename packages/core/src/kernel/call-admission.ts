import { ErrorCodes, type StepError } from '../errors.js';
import { tooDeepMessage, tooDeepPath } from '../plan/nesting-depth.js';
import { toJsonPath } from '../plan/references.js';
import type { ToolDefinition } from '../tools/define-tool.js';
import { compileSchema, formatIssues } from '../tools/schema.js';
import { approvalModeFor } from './approval.js';
import type { KernelContext, ToolCallOutcome, ToolCallRequest } from './invoke-step.js';
import { waitingError } from './pause-approval.js';
import { decideApproval } from './step-approval.js';

/** The outcome of a call that never reached its tool (nothing was executed). */
export function refusedOutcome(
  request: ToolCallRequest,
  status: ToolCallOutcome['status'],
  error: StepError,
  started: number,
): ToolCallOutcome {
  return {
    status,
    error,
    artifacts: [],
    executionId: request.executionId,
    durationMs: performance.now() - started,
    called: false,
  };
}

type CheckedArguments =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: StepError };

/**
 * The call's arguments against the tool's input schema (E202), after a depth check: a value nested
 * too deep for the journal's walks is refused before any schema recurses into it. Synchronous unless
 * the schema validates asynchronously.
 */
function checkArguments(request: ToolCallRequest, tool: ToolDefinition): CheckedArguments | Promise<CheckedArguments> {
  const invalid = (message: string, path: string, details?: Record<string, unknown>) => ({
    ok: false as const,
    error: {
      code: ErrorCodes.ARGUMENTS_INVALID,
      message: `invalid arguments for ${tool.name}: ${message}`,
      retryable: false,
      location: `${request.stepId}/args${path}`,
      ...(details ? { details } : {}),
    },
  });
  const deep = tooDeepPath(request.args);
  if (deep) return invalid(tooDeepMessage('arguments too deep'), toJsonPath(deep));
  const verdict = (validated: Awaited<ReturnType<ReturnType<typeof compileSchema>['validate']>>): CheckedArguments =>
    validated.ok
      ? { ok: true, value: validated.value }
      : invalid(formatIssues(validated.issues), validated.issues[0]?.path ?? '', { issues: validated.issues });
  const validated = compileSchema(tool.input).validate(request.args);
  return validated instanceof Promise ? validated.then(verdict) : verdict(validated);
}

export type Admission =
  | { readonly admitted: true; readonly tool: ToolDefinition; readonly args: Record<string, unknown> }
  | { readonly admitted: false; readonly outcome: ToolCallOutcome };

/**
 * Everything before a tool may run, in order: whitelist (E201) → argument validation (E202) →
 * preconditions (E1xx) → approval. A refusal carries the outcome to return. Synchronous when
 * nothing has to be waited for (no preconditions, no approval, a synchronous schema): most calls.
 */
export function admitCall(
  request: ToolCallRequest,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
): Admission | Promise<Admission> {
  const tool = request.tool === undefined ? undefined : context.registry.get(request.tool);
  if (!tool) {
    return refused(request, context, started, 'failed', {
      code: ErrorCodes.TOOL_UNKNOWN,
      message: `tool "${request.tool ?? ''}" is not registered`,
      retryable: false,
      location: `${request.stepId}/tool`,
    });
  }
  const validated = checkArguments(request, tool);
  if (validated instanceof Promise) {
    return validated.then((checked) => admitChecked(request, context, signal, started, tool, checked));
  }
  return admitChecked(request, context, signal, started, tool, validated);
}

/**
 * A refusal quotes the call (tool name, argument paths, the schema's words about the values):
 * redacted as the journal would, since the outcome also goes back to callers that journal nothing.
 */
function refused(
  request: ToolCallRequest,
  context: KernelContext,
  started: number,
  status: ToolCallOutcome['status'],
  error: StepError,
): Admission {
  return { admitted: false, outcome: refusedOutcome(request, status, context.journal.redactor.redact(error), started) };
}

function admitChecked(
  request: ToolCallRequest,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
  tool: ToolDefinition,
  validated: CheckedArguments,
): Admission | Promise<Admission> {
  if (!validated.ok) return refused(request, context, started, 'failed', validated.error);
  const approval = approvalModeFor(
    context.approvals?.policy,
    tool.name,
    tool.effect,
    request.requiresApproval ?? false,
  );
  if ((request.preconditions && request.preconditions.length > 0) || approval.mode !== 'auto') {
    return admitAfterWaits(request, context, signal, started, tool, validated.value, approval);
  }
  return { admitted: true, tool, args: validated.value as Record<string, unknown> };
}

/** Preconditions, then the approval: the parts of admission that wait. */
async function admitAfterWaits(
  request: ToolCallRequest,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
  tool: ToolDefinition,
  args: unknown,
  approval: ReturnType<typeof approvalModeFor>,
): Promise<Admission> {
  const refuse = (status: ToolCallOutcome['status'], error: StepError) =>
    refused(request, context, started, status, error);
  if (request.preconditions && request.preconditions.length > 0) {
    const checked = await context.registry.preconditions.check(request.preconditions, {
      workspace: context.workspace,
      runId: context.runId,
      stepId: request.stepId,
      signal,
    });
    if (!checked.ok) {
      return refuse('failed', {
        code: checked.code,
        message: `precondition ${request.preconditions[checked.index]?.kind} failed: ${checked.message}`,
        retryable: false,
        location: `${request.stepId}/preconditions/${checked.index}`,
      });
    }
  }
  if (approval.mode !== 'auto') {
    const decided = await decideApproval(
      request,
      context,
      tool.name,
      tool.effect,
      { mode: approval.mode, reason: approval.reason },
      args,
      signal,
    );
    if (decided.decision === 'waiting') return refuse('waiting', waitingError(request.stepId, tool.name));
    if (decided.decision !== 'approved') {
      const status = decided.decision === 'skipped' ? 'skipped' : 'denied';
      return refuse(status, {
        code: ErrorCodes.APPROVAL_DENIED,
        message: `${tool.name} was ${status === 'skipped' ? 'skipped' : 'denied'}${decided.reason ? `: ${decided.reason}` : ''}`,
        retryable: false,
        location: `${request.stepId}`,
      });
    }
  }
  return { admitted: true, tool, args: args as Record<string, unknown> };
}
