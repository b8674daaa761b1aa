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

/**
 * The call's arguments against the tool's input schema (E202), after a depth check: a value nested
 * too deep for the journal's walks is refused before any schema recurses into it.
 */
async function checkArguments(
  request: ToolCallRequest,
  tool: ToolDefinition,
): Promise<{ readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: StepError }> {
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
  let validated = compileSchema(tool.input).validate(request.args);
  if (validated instanceof Promise) validated = await validated;
  if (validated.ok) return { ok: true, value: validated.value };
  return invalid(formatIssues(validated.issues), validated.issues[0]?.path ?? '', { issues: validated.issues });
}

export type Admission =
  | { readonly admitted: true; readonly tool: ToolDefinition; readonly args: Record<string, unknown> }
  | { readonly admitted: false; readonly outcome: ToolCallOutcome };

/**
 * Everything before a tool may run, in order: whitelist (E201) → argument validation (E202) →
 * preconditions (E1xx) → approval. A refusal carries the outcome to return.
 */
export async function admitCall(
  request: ToolCallRequest,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
): Promise<Admission> {
  // A refusal quotes the call (tool name, argument paths, the schema's words about the values):
  // redacted as the journal would, since the outcome also goes back to callers that journal nothing.
  const refuse = (status: ToolCallOutcome['status'], error: StepError): Admission => ({
    admitted: false,
    outcome: refusedOutcome(request, status, context.journal.redactor.redact(error), started),
  });
  const tool = request.tool === undefined ? undefined : context.registry.get(request.tool);
  if (!tool) {
    return refuse('failed', {
      code: ErrorCodes.TOOL_UNKNOWN,
      message: `tool "${request.tool ?? ''}" is not registered`,
      retryable: false,
      location: `${request.stepId}/tool`,
    });
  }

  const validated = await checkArguments(request, tool);
  if (!validated.ok) return refuse('failed', validated.error);

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

  const approval = approvalModeFor(
    context.approvals?.policy,
    tool.name,
    tool.effect,
    request.requiresApproval ?? false,
  );
  if (approval.mode !== 'auto') {
    const decided = await decideApproval(
      request,
      context,
      tool.name,
      tool.effect,
      { mode: approval.mode, reason: approval.reason },
      validated.value,
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
  return { admitted: true, tool, args: validated.value as Record<string, unknown> };
}
