import { type GoalStepSession, type Outcome, stepError } from './goal-step-session.js';
import { stepMessage } from './step-prompt.js';

/**
 * Opens a fresh step's conversation: the system prompt, then the plan, the step and its inputs.
 * The step's preconditions are checked first: the failure of one is returned as the step's end,
 * before the model is asked.
 */
export async function openConversation(session: GoalStepSession): Promise<Outcome | undefined> {
  const { plan, step, dependencies, settings, kernel } = session.context;
  if (step.preconditions?.length) {
    const checked = await kernel.registry.preconditions.check(step.preconditions, {
      workspace: kernel.workspace,
      runId: kernel.runId,
      stepId: step.id,
      signal: session.signal,
    });
    if (!checked.ok) {
      return {
        status: 'failed',
        error: stepError(
          checked.code,
          `precondition ${step.preconditions[checked.index]?.kind} failed: ${checked.message}`,
          `${step.id}/preconditions/${checked.index}`,
        ),
      };
    }
  }
  session.push({ role: 'system', content: settings.systemPrompt });
  session.push({
    role: 'user',
    content: stepMessage(
      plan,
      step,
      dependencies,
      session.toolset.definitions.map((definition) => definition.name),
      { estimator: settings.estimator, maxDependencyTokens: settings.limits.maxToolResultTokens },
    ),
  });
  return undefined;
}
