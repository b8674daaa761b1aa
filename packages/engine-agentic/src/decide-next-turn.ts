import { ErrorCodes } from '@stepwise/core';
import { askOrFail, deliverAnswer } from './ask-person.js';
import type { ChatResponse } from './chat-model.js';
import type { DispatchedCalls } from './dispatch-tool-calls.js';
import type { GoalStepSession, Outcome } from './goal-step-session.js';
import { analyseNote, CONTINUE_NOTE, EMPTY_ANSWER_NOTE, LAST_TURN_NOTE } from './step-prompt.js';

/**
 * Before each model call: a stopped step, a used-up turn limit or token budget ends the step (the
 * outcome is returned); undefined lets the loop call the model.
 */
export function checkTurnLimits(session: GoalStepSession): Outcome | undefined {
  const { signal, maxTurns, usage } = session;
  const { tokenBudget } = session.context.settings.limits;
  if (signal.aborted) return session.stopped();
  if (session.turn >= maxTurns && !deliverAnswer(session, 'turns')) {
    const message = `the step used all of its ${maxTurns} turns without completing`;
    return askOrFail(
      session,
      'turns',
      `${message}; may it go on?`,
      session.limitReached('turns', maxTurns, session.failure(ErrorCodes.TURN_LIMIT, message)),
    );
  }
  const spent = usage?.totalTokens ?? 0;
  if (tokenBudget !== undefined && spent >= tokenBudget) {
    return session.limitReached(
      'token-budget',
      spent,
      session.failure(ErrorCodes.TOKEN_BUDGET, `the step spent ${spent} tokens, its budget is ${tokenBudget}`),
    );
  }
  return undefined;
}

/** After tool calls: BLOCKED or an accepted completion ends the step, so do too many failures. */
function endOrRequireAnalysis(session: GoalStepSession, calls: DispatchedCalls): Outcome | undefined {
  const { loop } = session;
  const { journal } = session.context.kernel;
  const { limits } = session.context.settings;
  if (calls.blocked !== undefined && !deliverAnswer(session, 'blocked')) {
    return askOrFail(
      session,
      'blocked',
      calls.blocked,
      session.failure(ErrorCodes.STEP_BLOCKED, `the model reported the step blocked: ${calls.blocked}`, {
        reason: calls.blocked,
      }),
    );
  }
  const completion = calls.completion;
  if (completion) {
    return {
      status: 'succeeded',
      output: {
        summary: completion.summary,
        ...(completion.goals === undefined ? {} : { goals: completion.goals }),
        ...(completion.result === undefined ? {} : { result: completion.result }),
        turns: session.turn,
      },
    };
  }
  if (loop.toolFailures >= session.maxToolFailures && !deliverAnswer(session, 'tool-failures')) {
    const message = `${loop.toolFailures} tool calls failed in this step (limit ${session.maxToolFailures})`;
    return askOrFail(
      session,
      'tool-failures',
      `${message}; may it go on?`,
      session.limitReached('tool-failures', loop.toolFailures, session.failure(ErrorCodes.TOOL_FAILURE_LIMIT, message)),
    );
  }
  if (!loop.analyseRequired && loop.consecutiveToolCalls >= limits.maxConsecutiveToolCalls) {
    journal.emit({
      type: 'limit-reach',
      stepId: session.stepId,
      limit: 'consecutive-tool-calls',
      value: loop.consecutiveToolCalls,
    });
    loop.analyseRequired = true;
    session.push({ role: 'user', content: analyseNote(loop.consecutiveToolCalls) });
  }
  return undefined;
}

/**
 * Decides what follows a processed answer: the step ends (its outcome is returned), or the loop
 * goes on (undefined) with a note for the model (continue, analyse first, last turn).
 */
export function decideNextTurn(
  session: GoalStepSession,
  response: ChatResponse,
  calls: DispatchedCalls,
): Outcome | undefined {
  if (response.toolCalls.length === 0) {
    // ANALYZE: text without tools resets the run of consecutive tool calls.
    session.loop.consecutiveToolCalls = 0;
    session.loop.analyseRequired = false;
    session.push({ role: 'user', content: response.text.trim() === '' ? EMPTY_ANSWER_NOTE : CONTINUE_NOTE });
  } else {
    const end = endOrRequireAnalysis(session, calls);
    if (end) return end;
  }
  if (session.turn === session.maxTurns - 1) session.push({ role: 'user', content: LAST_TURN_NOTE });
  return undefined;
}
