import type { RunJournal } from '../journal/journal.js';
import type { Effect } from '../tools/define-tool.js';
import type { ApprovalDecision, ApprovalHandler, ApprovalRequest } from './approval.js';
import type { KernelContext, ToolCallRequest } from './invoke-step.js';
import { answerOrWait } from './pause-approval.js';
import { raceAbort } from './tool-execution.js';

type ApprovalOutcome = { decision: 'approved' | 'denied' | 'skipped' | 'waiting'; reason?: string };

/** What every approval event of one call carries. */
interface DecisionBase {
  readonly stepId: string;
  readonly executionId: string;
  readonly tool: string;
}

/** Asks for (or applies the policy's) approval of one call, journaling request and decision. */
export async function decideApproval(
  request: ToolCallRequest,
  context: KernelContext,
  toolName: string,
  effect: Effect,
  approval: { mode: 'prompt' | 'deny' | 'pause'; reason: 'step' | 'policy' },
  args: unknown,
  signal: AbortSignal,
): Promise<ApprovalOutcome> {
  const { journal } = context;
  const base: DecisionBase = { stepId: request.stepId, executionId: request.executionId, tool: toolName };
  if (approval.mode === 'deny') {
    const reason = `the approval policy denies ${effect} tools`;
    await journal.record({ type: 'approval-decision', ...base, decision: 'denied', source: 'policy', reason });
    return { decision: 'denied', reason };
  }
  const requestEvent = journal.emit({
    type: 'approval-request',
    ...base,
    effect,
    args: args as Record<string, unknown>,
    reason: approval.reason,
  });
  await journal.flush();
  const handler = context.approvals?.handler;
  const nonInteractive = context.approvals?.policy?.nonInteractive ?? 'deny';
  // A person's journaled answer applies whatever the mode (the resuming process may have a handler or none).
  if (context.answers?.has(request.stepId) || approval.mode === 'pause' || (!handler && nonInteractive === 'pause')) {
    return answerOrWait(journal, context.answers, base);
  }
  if (!handler) return decideWithoutHandler(journal, base, nonInteractive);
  const answer = await askHandler(handler, {
    runId: context.runId,
    stepId: request.stepId,
    executionId: request.executionId,
    tool: toolName,
    effect,
    args: requestEvent.type === 'approval-request' ? requestEvent.args : {},
    description: request.description,
    reason: approval.reason,
    signal,
  });
  return recordHandlerDecision(journal, base, answer);
}

/** No one to ask (CI, `--json`): the policy's `nonInteractive` fallback decides. */
async function decideWithoutHandler(
  journal: RunJournal,
  base: DecisionBase,
  fallback: 'auto' | 'deny' | 'pause',
): Promise<ApprovalOutcome> {
  const reason = fallback === 'auto' ? 'non-interactive: approved by policy' : 'non-interactive: no one to ask';
  const decision = fallback === 'auto' ? 'approved' : 'denied';
  await journal.record({ type: 'approval-decision', ...base, decision, source: 'fallback', reason });
  return { decision, reason };
}

/**
 * The handler's answer; a handler that throws denies, with its error as the reason. The wait ends
 * when the run's signal aborts (the run stopped or lost its lease) even if the handler ignores it.
 */
async function askHandler(handler: ApprovalHandler, request: ApprovalRequest): Promise<ApprovalDecision | boolean> {
  const failed = (error: unknown) => ({
    decision: 'deny' as const,
    reason: `approval handler failed: ${error instanceof Error ? error.message : error}`,
  });
  try {
    const raced = await raceAbort(Promise.resolve(handler(request)), request.signal);
    return raced.kind === 'done' ? raced.value : failed(request.signal.reason);
  } catch (error) {
    return failed(error);
  }
}

async function recordHandlerDecision(
  journal: RunJournal,
  base: DecisionBase,
  answer: ApprovalDecision | boolean,
): Promise<ApprovalOutcome> {
  const normalized = typeof answer === 'boolean' ? { decision: answer ? 'approve' : 'deny' } : answer;
  const decision =
    normalized.decision === 'approve' ? 'approved' : normalized.decision === 'skip' ? 'skipped' : 'denied';
  const by = 'by' in normalized ? normalized.by : undefined;
  const reason = 'reason' in normalized ? normalized.reason : undefined;
  await journal.record({
    type: 'approval-decision',
    ...base,
    decision,
    source: 'handler',
    ...(by === undefined ? {} : { by }),
    ...(reason === undefined ? {} : { reason }),
  });
  return { decision, ...(reason === undefined ? {} : { reason }) };
}
