import type { Effect } from '../tools/define-tool.js';
import type { KernelContext, ToolCallRequest } from './invoke-step.js';
import { answerOrWait } from './pause-approval.js';

/** Asks for (or applies the policy's) approval of one call, journaling request and decision. */
export async function decideApproval(
  request: ToolCallRequest,
  context: KernelContext,
  toolName: string,
  effect: Effect,
  approval: { mode: 'prompt' | 'deny' | 'pause'; reason: 'step' | 'policy' },
  args: unknown,
  signal: AbortSignal,
): Promise<{ decision: 'approved' | 'denied' | 'skipped' | 'waiting'; reason?: string }> {
  const { journal } = context;
  const base = {
    stepId: request.stepId,
    executionId: request.executionId,
    tool: toolName,
  };
  if (approval.mode === 'deny') {
    const reason = `the approval policy denies ${effect} tools`;
    await journal.record({
      type: 'approval-decision',
      ...base,
      decision: 'denied',
      source: 'policy',
      reason,
    });
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
  // A person's journaled answer applies whatever the mode (the resuming process may have a handler or none).
  if (
    context.answers?.has(request.stepId) ||
    approval.mode === 'pause' ||
    (!handler && context.approvals?.policy?.nonInteractive === 'pause')
  ) {
    return answerOrWait(journal, context.answers, base);
  }
  if (!handler) {
    const fallback = context.approvals?.policy?.nonInteractive ?? 'deny';
    const reason = fallback === 'auto' ? 'non-interactive: approved by policy' : 'non-interactive: no one to ask';
    const decision = fallback === 'auto' ? 'approved' : 'denied';
    await journal.record({
      type: 'approval-decision',
      ...base,
      decision,
      source: 'fallback',
      reason,
    });
    return { decision, reason };
  }
  let answer: Awaited<ReturnType<typeof handler>>;
  try {
    answer = await handler({
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
  } catch (error) {
    answer = {
      decision: 'deny',
      reason: `approval handler failed: ${error instanceof Error ? error.message : error}`,
    };
  }
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
