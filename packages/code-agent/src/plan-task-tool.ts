import { type AnyTool, defineTool, ErrorCodes, StepwiseError, ToolError, type ToolRegistry } from '@stepwise/core';
import type * as EngineAgentic from '@stepwise/engine-agentic';
import { z } from 'zod';
import { IMPLEMENTATION_TOOLS } from './code-agent-attempt.js';

/** `@stepwise/engine-agentic`: the planner, the goal-step executor and the adjust hooks the code agent uses. */
export type AgenticModule = typeof EngineAgentic;
export type ChatModel = EngineAgentic.ChatModel;
type PlannerCall = Awaited<ReturnType<AgenticModule['planFromGoal']>>['calls'][number];

/** The tool of the code agent's first step: the model plans the task. */
export const PLAN_TASK_TOOL = 'plan_task';

/** The id of the planning step a code-agent run starts with (when no plan is given). */
export const PLAN_STEP_ID = 'plan';

/** What the planner is told besides the task: the shape of an implementation step and the validation. */
export function plannerContext(validation: readonly string[]): string {
  return [
    'Plan the change as implementation steps: each step has an "id" and a "description" of one change, and no "tool".',
    `A model carries out each step with ${IMPLEMENTATION_TOOLS.join(', ')}.`,
    `After every step the validation runs (${validation.join('; ')}); it must pass after each step, so keep steps whole.`,
    'Steps that do not need each other need no "dependsOn": a step that cannot be done does not stop them.',
    'A small fix is one step.',
  ].join('\n');
}

export interface PlanTaskSettings {
  readonly agentic: AgenticModule;
  readonly model: ChatModel;
  /** The tools the planned steps may use (checked by the planner). */
  readonly tools: () => ToolRegistry;
  readonly validation: readonly string[];
  readonly maxRepairs?: number;
}

/** A planner call as the planning step's output carries it (journaled as `model-call` by the adjust hook). */
export type JournaledPlannerCall = PlannerCall;

/**
 * The planning step's tool: asks the model for a plan of goal steps (with the planner's repair
 * loop) and returns it with every model call, also when planning fails (the error's details), so
 * the run journals them. Idempotent: a crash while planning plans again on resume.
 */
export function planTaskTool(settings: PlanTaskSettings): AnyTool {
  return defineTool({
    name: PLAN_TASK_TOOL,
    description: 'Plans a coding task as implementation steps (the code agent).',
    input: z.object({ task: z.string().min(1) }),
    effect: 'read',
    idempotent: true,
    async execute({ task }, context) {
      try {
        const planned = await settings.agentic.planFromGoal({
          goal: task,
          tools: settings.tools(),
          model: settings.model,
          engine: 'agentic',
          context: plannerContext(settings.validation),
          ...(settings.maxRepairs === undefined ? {} : { maxRepairs: settings.maxRepairs }),
          signal: context.signal,
        });
        return { plan: planned.plan, calls: planned.calls };
      } catch (error) {
        if (!StepwiseError.isInstance(error)) throw error;
        throw new ToolError({
          code: error.code,
          message: `planning failed: ${error.message}`,
          retryable: false,
          ...(error.location === undefined ? {} : { location: error.location }),
          details: { ...error.details },
        });
      }
    },
  });
}

/** The planner calls a planning step's result carries (its output, or its error's details). */
export function plannerCallsOf(value: unknown): PlannerCall[] {
  const calls = (value as { calls?: unknown } | undefined)?.calls;
  return Array.isArray(calls) ? (calls as PlannerCall[]) : [];
}

/** E601 for a plan_task step given by hand with a task that is not a string. */
export function checkTask(task: unknown): string {
  if (typeof task !== 'string' || task.trim() === '') {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'solve needs a task', { location: 'task' });
  }
  return task;
}
