import type { PlanProblem } from '@stepwise/core';
import type { ChatResponse } from '../chat-model.js';
import { PlannerErrorCodes } from './planner-error.js';
import { SUBMIT_PLAN } from './planner-prompt.js';

/** The plan candidate in an answer, or the reason there is none. */
export type PlanAnswer =
  | { readonly ok: true; readonly candidate: unknown; readonly toolCallId: string | undefined }
  | { readonly ok: false; readonly problem: PlanProblem; readonly toolCallId: string | undefined };

const FENCE = /```(?:json)?\s*\n([\s\S]*?)```/;

function notJson(message: string, toolCallId: string | undefined): PlanAnswer {
  return {
    ok: false,
    toolCallId,
    problem: { code: PlannerErrorCodes.ANSWER_NOT_JSON, kind: 'json-syntax', path: '', message },
  };
}

function parseObject(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Text answers are accepted for models that write JSON instead of calling the tool: the whole
 * text, a fenced block, or the outermost braces, in that order.
 */
export function jsonObjectFromText(text: string): unknown {
  const trimmed = text.trim();
  const whole = parseObject(trimmed);
  if (whole !== undefined) return whole;
  const fenced = FENCE.exec(trimmed)?.[1];
  if (fenced !== undefined) {
    const inner = parseObject(fenced.trim());
    if (inner !== undefined) return inner;
  }
  const start = trimmed.indexOf('{');
  const end = trimmed.lastIndexOf('}');
  return start >= 0 && end > start ? parseObject(trimmed.slice(start, end + 1)) : undefined;
}

/** Finds the plan in a model answer: the `submit_plan` call's arguments, else JSON in the text. */
export function readPlanAnswer(response: ChatResponse): PlanAnswer {
  const call = response.toolCalls.find((candidate) => candidate.name === SUBMIT_PLAN);
  if (call) {
    if (call.parseError !== undefined) {
      return notJson(`the ${SUBMIT_PLAN} arguments are not a JSON object: ${call.parseError}`, call.id);
    }
    return { ok: true, candidate: call.arguments, toolCallId: call.id };
  }
  const other = response.toolCalls[0];
  if (other) return notJson(`only ${SUBMIT_PLAN} may be called, not "${other.name}"`, other.id);
  const candidate = jsonObjectFromText(response.text);
  if (candidate !== undefined) return { ok: true, candidate, toolCallId: undefined };
  const preview = response.text.trim().slice(0, 120);
  return notJson(
    preview
      ? `the answer is not a JSON plan: "${preview}${response.text.trim().length > 120 ? '…' : ''}"`
      : 'the answer is empty',
    undefined,
  );
}
