import type { FunctionDefinition } from '@stepwise/core';
import { z } from 'zod';

export const COMPLETE_STEP = 'complete_step';
export const REPORT_BLOCKED = 'report_blocked';

const GoalProgressSchema = z.object({
  goal: z.string().min(1),
  status: z.enum(['achieved', 'in_progress', 'blocked']),
  progress: z.string().optional(),
});

export const CompleteStepSchema = z.object({
  summary: z.string().min(1),
  goals: z.array(GoalProgressSchema).optional(),
  result: z.unknown().optional(),
});

export const ReportBlockedSchema = z.object({
  reason: z.string().min(1),
  goals: z.array(GoalProgressSchema).optional(),
});

export type GoalProgress = z.infer<typeof GoalProgressSchema>;
export type CompleteStepArguments = z.infer<typeof CompleteStepSchema>;

const goalsParameter = {
  type: 'array',
  description: 'Progress per goal of the step.',
  items: {
    type: 'object',
    properties: {
      goal: { type: 'string' },
      status: { type: 'string', enum: ['achieved', 'in_progress', 'blocked'] },
      progress: { type: 'string' },
    },
    required: ['goal', 'status'],
  },
};

/** The two tools every goal step offers besides the registry's: COMPLETE and BLOCKED. */
export const builtInToolDefinitions: readonly FunctionDefinition[] = [
  {
    name: COMPLETE_STEP,
    description:
      "Call when the step's goal is achieved and its expected outcome holds. The engine checks the expected outcome before accepting.",
    parameters: {
      type: 'object',
      properties: {
        summary: { type: 'string', description: 'What was done and what the result is.' },
        goals: goalsParameter,
        result: { description: 'Optional structured result that later steps receive.' },
      },
      required: ['summary'],
    },
  },
  {
    name: REPORT_BLOCKED,
    description:
      'Call when the step cannot be completed (missing access, a denied action, repeated failures), with the reason.',
    parameters: {
      type: 'object',
      properties: { reason: { type: 'string', description: 'Why the step cannot continue.' }, goals: goalsParameter },
      required: ['reason'],
    },
  },
];

export function isBuiltInTool(name: string): boolean {
  return name === COMPLETE_STEP || name === REPORT_BLOCKED;
}
