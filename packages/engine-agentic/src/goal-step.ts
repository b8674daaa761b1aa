import {
  type ApprovalRecord,
  type Artifact,
  addUsage,
  callTool,
  deriveExecutionId,
  ErrorCodes,
  type ExecutionState,
  endStep,
  exitCodeOf,
  type FunctionDefinition,
  type KernelContext,
  type ModelCallEvent,
  type Plan,
  type Step,
  type StepError,
  type StepResult,
  StepwiseError,
  type TokenUsage,
  type ToolCallOutcome,
  toStepError,
} from '@stepwise/core';
import {
  builtInToolDefinitions,
  COMPLETE_STEP,
  CompleteStepSchema,
  isBuiltInTool,
  REPORT_BLOCKED,
  ReportBlockedSchema,
} from './built-in-tools.js';
import type { ChatMessage, ChatModel, ChatResponse, ChatToolCall, ToolChoice } from './chat-model.js';
import { fitContext, promptTokens, toolDefinitionTokens, truncateText } from './context-window.js';
import {
  checkExpectations,
  type ExpectationChecker,
  type ExpectationOutcome,
  expectationProblems,
  spawnCommand,
} from './expectations.js';
import { generateWithRetry, isTimeoutReason, type ModelRetryOptions } from './generate-with-retry.js';
import { ModelError } from './model-error.js';
import { analyseNote, CONTINUE_NOTE, EMPTY_ANSWER_NOTE, LAST_TURN_NOTE, stepMessage } from './step-prompt.js';
import type { TokenEstimator } from './token-estimator.js';

/** The loop's limits, resolved (see `AgenticLimits` for their meaning and defaults). */
export interface ResolvedLimits {
  readonly maxTurns: number;
  readonly maxConsecutiveToolCalls: number;
  readonly maxToolFailures: number;
  readonly tokenBudget: number | undefined;
  readonly maxContextTokens: number;
  readonly maxToolResultTokens: number;
}

/** How `command_succeeds` runs through a registered tool. */
export interface CommandToolOptions {
  readonly tool: string;
  readonly args: (argv: readonly string[]) => Record<string, unknown>;
}

export interface LoopSettings {
  readonly model: ChatModel;
  readonly limits: ResolvedLimits;
  readonly retry: Required<ModelRetryOptions>;
  readonly systemPrompt: string;
  readonly modelTimeoutMs: number | undefined;
  readonly estimator: TokenEstimator;
  readonly random: () => number;
  readonly expectations: Readonly<Record<string, ExpectationChecker>>;
  readonly commandTool: CommandToolOptions;
  readonly commandTimeoutMs: number;
  readonly allowRerunInterrupted: boolean;
}

/** What the journal says about a step that was in flight: the turns to replay instead of repeating. */
export interface StepReplay {
  /** The step's successful model calls, in turn order. */
  readonly modelCalls: readonly ModelCallEvent[];
  readonly executions: ReadonlyMap<string, ExecutionState>;
  readonly approvals: readonly ApprovalRecord[];
  readonly startedAt: string;
}

export interface GoalStepContext {
  readonly plan: Plan;
  readonly step: Step;
  /** Index of the step in the plan, for error locations. */
  readonly stepIndex: number;
  readonly attempt: number;
  /** The kernel context; its signal is the step's (cancel, critical sibling, step timeout). */
  readonly kernel: KernelContext;
  readonly settings: LoopSettings;
  readonly dependencies: readonly { readonly stepId: string; readonly output: unknown }[];
  readonly replay?: StepReplay;
}

/** Loop counters, journaled with every model call so a resumed step continues with the same state. */
interface LoopState {
  consecutiveToolCalls: number;
  toolFailures: number;
  analyseRequired: boolean;
}

/** What a model call journals as its request, besides the messages sent. */
interface RecordedRequest {
  readonly attempt: number;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly string[];
  readonly toolChoice: ToolChoice;
  /** Messages added to the conversation since the previous model call: replayed on resume. */
  readonly appended: readonly ChatMessage[];
  readonly loop: LoopState;
  readonly omitted: number;
  readonly promptTokens: number;
}

type Outcome = Pick<ToolCallOutcome, 'status' | 'output' | 'error'>;

class StepEnd {
  constructor(readonly outcome: Outcome) {}
}

function render(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value) ?? 'null';
}

function stepError(code: string, message: string, location: string, details?: Record<string, unknown>): StepError {
  return { code, message, retryable: false, location, ...(details ? { details } : {}) };
}

/**
 * Runs one goal step: the model picks tools turn by turn until it completes (checked against
 * `expect`), reports the step blocked, or a limit is hit. Every tool call goes through the core
 * kernel; every model turn is journaled before its tool calls run. With `replay`, the journaled
 * turns rebuild the conversation and the step continues after the last completed turn.
 */
export async function runGoalStep(context: GoalStepContext): Promise<StepResult> {
  const { plan, step, attempt, kernel, settings, replay } = context;
  const { journal, registry } = kernel;
  const { limits, estimator, model } = settings;
  const signal = kernel.signal ?? new AbortController().signal;
  const started = performance.now() - (replay ? Date.now() - Date.parse(replay.startedAt) : 0);
  const startedAt = replay?.startedAt ?? new Date().toISOString();
  const executionId = deriveExecutionId(kernel.runId, step.id, attempt);
  const maxTurns = step.maxTurns ?? limits.maxTurns;
  const artifacts: Artifact[] = [];
  const toolOutputs: string[] = [];
  let usage: TokenUsage | undefined;
  let turn = 0;
  const state: LoopState = { consecutiveToolCalls: 0, toolFailures: 0, analyseRequired: false };

  const finish = (outcome: Outcome) =>
    endStep(
      step,
      attempt,
      executionId,
      startedAt,
      started,
      { ...outcome, artifacts, ...(usage ? { usage } : {}) },
      kernel,
    );
  const failure = (code: string, message: string, details?: Record<string, unknown>) =>
    new StepEnd({ status: 'failed', error: stepError(code, message, step.id, details) });
  const limitReached = (limit: 'turns' | 'tool-failures' | 'token-budget', value: number, end: StepEnd) => {
    journal.emit({ type: 'limit-reach', stepId: step.id, limit, value });
    return end;
  };

  // Tools this step may call: the step's list (aliases and canonical names), or every registered tool.
  const listed = step.tools?.filter((name) => !isBuiltInTool(name));
  const definitions: FunctionDefinition[] = [
    ...registry.toFunctionDefinitions(listed).filter((definition) => !isBuiltInTool(definition.name)),
    ...builtInToolDefinitions,
  ];
  const allowed = new Set<string>([...(listed ?? []), ...definitions.map((definition) => definition.name)]);
  const toolTokens = toolDefinitionTokens(definitions, estimator);

  const conversation: ChatMessage[] = [];
  let appended: ChatMessage[] = [];
  const push = (message: ChatMessage) => {
    conversation.push(message);
    appended.push(message);
  };

  const approvalsByExecution = new Map<string, ApprovalRecord>();
  for (const approval of replay?.approvals ?? []) approvalsByExecution.set(approval.executionId, approval);

  /** The journaled outcome of a call a crash interrupted, or undefined when it has to run (again). */
  const replayedOutcome = (id: string, tool: string): ToolCallOutcome | undefined => {
    const execution = replay?.executions.get(id);
    if (execution) {
      if (execution.status === 'succeeded' || execution.status === 'failed') {
        return {
          status: execution.status,
          output: execution.output,
          ...(execution.error ? { error: execution.error } : {}),
          artifacts: execution.artifacts,
          executionId: id,
          durationMs: execution.durationMs ?? 0,
          called: true,
        };
      }
      if (execution.idempotent || settings.allowRerunInterrupted) return undefined;
      // Started, never finished, not safe to repeat: close the record and let the model find out.
      const error = stepError(
        ErrorCodes.STEP_INTERRUPTED,
        `${tool} was running when the run stopped; it may or may not have taken effect and was not run again`,
        step.id,
      );
      journal.emit({
        type: 'tool-result',
        stepId: step.id,
        executionId: id,
        tool: execution.tool,
        status: 'failed',
        error,
        startedAt: execution.startedAt,
        durationMs: 0,
      });
      return { status: 'failed', error, artifacts: [], executionId: id, durationMs: 0, called: true };
    }
    const approval = approvalsByExecution.get(id);
    if (approval && approval.decision !== 'approved') {
      const status = approval.decision === 'skipped' ? 'skipped' : 'denied';
      return {
        status,
        error: stepError(
          ErrorCodes.APPROVAL_DENIED,
          `${tool} was ${status}${approval.reason ? `: ${approval.reason}` : ''}`,
          step.id,
        ),
        artifacts: [],
        executionId: id,
        durationMs: 0,
        called: false,
      };
    }
    return undefined;
  };

  const invoke = async (tool: string, args: Record<string, unknown>, id: string): Promise<ToolCallOutcome> => {
    const replayed = replayedOutcome(id, tool);
    if (replayed) return replayed;
    const outcome = await callTool(
      {
        stepId: step.id,
        tool,
        args,
        attempt,
        executionId: id,
        turn,
        ...(step.requiresApproval ? { requiresApproval: true } : {}),
        ...(step.description ? { description: step.description } : {}),
      },
      kernel,
    );
    // The result is durable before the model hears of it: a crash from here on never repeats the call.
    await journal.flush();
    return outcome;
  };

  const toolMessage = (call: ChatToolCall, content: string): ChatMessage => ({
    role: 'tool',
    toolCallId: call.id,
    name: call.name,
    content,
  });

  /** What the model reads about a finished call; large results are cut, the full text kept as an artifact. */
  const describeOutcome = (outcome: ToolCallOutcome): string => {
    let text: string;
    if (outcome.status === 'succeeded') {
      text = render(outcome.output);
      toolOutputs.push(text);
    } else if (outcome.status === 'denied' || outcome.status === 'skipped') {
      text = `DENIED: ${outcome.error?.message ?? 'denied by user'}. The call was not run. Do not repeat it; find another way or call report_blocked.`;
    } else {
      const error = outcome.error;
      text = `ERROR ${error?.code ?? ErrorCodes.TOOL_FAILED}: ${error?.message ?? 'the tool failed'}${error?.details ? `\n${render(error.details)}` : ''}`;
    }
    const cut = truncateText(text, limits.maxToolResultTokens, estimator);
    if (cut.omittedTokens > 0) {
      artifacts.push({ kind: 'tool_output', name: outcome.executionId, content: text, mediaType: 'text/plain' });
    }
    return cut.text;
  };

  const runCommand = async (argv: readonly string[], id: string): Promise<ExpectationOutcome> => {
    if (registry.has(settings.commandTool.tool)) {
      const outcome = await invoke(settings.commandTool.tool, settings.commandTool.args(argv), id);
      if (outcome.status === 'cancelled') throw signal.reason;
      const exitCode = exitCodeOf(outcome.output, outcome.error);
      if (outcome.status === 'succeeded' && (exitCode === undefined || exitCode === 0)) return true;
      return {
        ok: false,
        message: `\`${argv.join(' ')}\` did not succeed: ${outcome.error?.message ?? `exit code ${exitCode}`}`,
      };
    }
    return spawnCommand(argv, { cwd: kernel.workspace ?? process.cwd(), timeoutMs: settings.commandTimeoutMs, signal });
  };

  /** Processes one model answer; throws StepEnd when the step is over. */
  const handleResponse = async (response: ChatResponse): Promise<void> => {
    const calls = response.toolCalls;
    if (calls.length === 0) {
      // ANALYZE: text without tools resets the run of consecutive tool calls.
      state.consecutiveToolCalls = 0;
      state.analyseRequired = false;
      push({ role: 'user', content: response.text.trim() === '' ? EMPTY_ANSWER_NOTE : CONTINUE_NOTE });
    } else {
      let completion: { summary: string; goals?: unknown; result?: unknown } | undefined;
      let blocked: string | undefined;
      const analyseRequired = state.analyseRequired;
      for (const [index, call] of calls.entries()) {
        const id = deriveExecutionId(kernel.runId, step.id, attempt, `t${turn}.c${index}`);
        if (call.name === COMPLETE_STEP || call.name === REPORT_BLOCKED) {
          if (completion || blocked) {
            push(toolMessage(call, 'Ignored: the step already ended in this turn.'));
            continue;
          }
          if (call.parseError) {
            state.toolFailures++;
            push(toolMessage(call, `ERROR ${ErrorCodes.ARGUMENTS_INVALID}: ${call.parseError}`));
            continue;
          }
          if (call.name === REPORT_BLOCKED) {
            const parsed = ReportBlockedSchema.safeParse(call.arguments);
            blocked = parsed.success ? parsed.data.reason : 'the model reported the step blocked without a reason';
            push(toolMessage(call, 'Noted: the step is blocked.'));
            continue;
          }
          const parsed = CompleteStepSchema.safeParse(call.arguments);
          if (!parsed.success) {
            state.toolFailures++;
            push(toolMessage(call, `ERROR ${ErrorCodes.ARGUMENTS_INVALID}: complete_step needs { summary: string }`));
            continue;
          }
          const missing = await checkExpectations(step.expect ?? [], settings.expectations, {
            workspace: kernel.workspace,
            signal,
            completion: parsed.data,
            toolOutputs,
            runCommand: (argv) => runCommand(argv, `${id}.expect`),
          });
          if (missing.length > 0) {
            push(
              toolMessage(
                call,
                `Not accepted: the step's expected outcome does not hold yet.\n${missing.map((item) => `- ${item}`).join('\n')}\nKeep working, then call complete_step again.`,
              ),
            );
            continue;
          }
          completion = parsed.data;
          push(toolMessage(call, 'Accepted: the step is complete.'));
          continue;
        }
        if (analyseRequired) {
          push(toolMessage(call, 'Not run: analyse the results so far before calling more tools.'));
          continue;
        }
        state.consecutiveToolCalls++;
        if (call.parseError) {
          state.toolFailures++;
          push(
            toolMessage(
              call,
              `ERROR ${ErrorCodes.ARGUMENTS_INVALID}: ${call.parseError}. Send the arguments as a JSON object.`,
            ),
          );
          continue;
        }
        if (!allowed.has(call.name)) {
          state.toolFailures++;
          push(
            toolMessage(
              call,
              `ERROR ${ErrorCodes.TOOL_UNKNOWN}: there is no tool "${call.name}" in this step. Available: ${[...allowed].join(', ')}.`,
            ),
          );
          continue;
        }
        const outcome = await invoke(call.name, call.arguments, id);
        if (outcome.status === 'cancelled') throw signal.reason;
        if (outcome.status !== 'succeeded') state.toolFailures++;
        push(toolMessage(call, describeOutcome(outcome)));
      }
      if (blocked !== undefined) {
        throw failure(ErrorCodes.STEP_BLOCKED, `the model reported the step blocked: ${blocked}`, { reason: blocked });
      }
      if (completion) {
        throw new StepEnd({
          status: 'succeeded',
          output: {
            summary: completion.summary,
            ...(completion.goals === undefined ? {} : { goals: completion.goals }),
            ...(completion.result === undefined ? {} : { result: completion.result }),
            turns: turn,
          },
        });
      }
      if (state.toolFailures >= limits.maxToolFailures) {
        throw limitReached(
          'tool-failures',
          state.toolFailures,
          failure(
            ErrorCodes.TOOL_FAILURE_LIMIT,
            `${state.toolFailures} tool calls failed in this step (limit ${limits.maxToolFailures})`,
          ),
        );
      }
      if (!state.analyseRequired && state.consecutiveToolCalls >= limits.maxConsecutiveToolCalls) {
        journal.emit({
          type: 'limit-reach',
          stepId: step.id,
          limit: 'consecutive-tool-calls',
          value: state.consecutiveToolCalls,
        });
        state.analyseRequired = true;
        push({ role: 'user', content: analyseNote(state.consecutiveToolCalls) });
      }
    }
    if (turn === maxTurns - 1) push({ role: 'user', content: LAST_TURN_NOTE });
  };

  const callModel = async (): Promise<ChatResponse> => {
    const window = fitContext(conversation, { maxTokens: limits.maxContextTokens, toolTokens, estimator });
    const toolChoice: ToolChoice = state.analyseRequired ? 'none' : 'auto';
    const request: RecordedRequest = {
      attempt,
      messages: window.messages,
      tools: definitions.map((definition) => definition.name),
      toolChoice,
      appended,
      loop: { ...state },
      omitted: window.omitted,
      promptTokens: window.tokens,
    };
    const { response, latencyMs } = await generateWithRetry(
      model,
      { messages: window.messages, tools: definitions, toolChoice },
      {
        retry: settings.retry,
        signal,
        timeoutMs: settings.modelTimeoutMs,
        random: settings.random,
        onFailure: async ({ error, call, latencyMs: failedLatency, retryInMs }) => {
          const journaled = toStepError(error);
          await journal.record({
            type: 'model-call',
            stepId: step.id,
            turn,
            model: model.name,
            request,
            latencyMs: failedLatency,
            error: {
              ...journaled,
              details: { ...journaled.details, call, ...(retryInMs === undefined ? {} : { retryInMs }) },
            },
          });
        },
      },
    );
    const reported = response.usage;
    const callUsage: TokenUsage = reported ?? estimateUsage(window.tokens, response);
    usage = addUsage(usage, callUsage);
    // Durable before any tool of this turn runs: resume replays this answer instead of asking again.
    await journal.record({
      type: 'model-call',
      stepId: step.id,
      turn,
      model: model.name,
      request,
      response: {
        text: response.text,
        toolCalls: response.toolCalls,
        finishReason: response.finishReason,
        ...(response.model ? { model: response.model } : {}),
        ...(reported ? {} : { usageEstimated: true }),
      },
      usage: callUsage,
      latencyMs,
    });
    appended = [];
    return response;
  };

  const estimateUsage = (prompt: number, response: ChatResponse): TokenUsage => {
    const completion = promptTokens(
      [{ role: 'assistant', content: response.text, toolCalls: response.toolCalls }],
      [],
      estimator,
    );
    return { promptTokens: prompt, completionTokens: completion, totalTokens: prompt + completion };
  };

  const assistantMessage = (response: ChatResponse): ChatMessage => ({
    role: 'assistant',
    content: response.text,
    ...(response.toolCalls.length > 0 ? { toolCalls: response.toolCalls } : {}),
  });

  try {
    const problems = expectationProblems(
      step.expect ?? [],
      settings.expectations,
      `/steps/${context.stepIndex}/expect`,
    );
    if (problems.length > 0) {
      throw new StepEnd({
        status: 'failed',
        error: {
          code: ErrorCodes.PLAN_INVALID,
          message: `invalid expect criteria: ${problems.map((problem) => `${problem.path}: ${problem.message}`).join('; ')}`,
          retryable: false,
          location: problems[0]?.path as string,
          details: { problems },
        },
      });
    }

    const replayed = replay?.modelCalls ?? [];
    if (replayed.length === 0) {
      if (step.preconditions?.length) {
        const checked = await registry.preconditions.check(step.preconditions, {
          workspace: kernel.workspace,
          runId: kernel.runId,
          stepId: step.id,
          signal,
        });
        if (!checked.ok) {
          throw new StepEnd({
            status: 'failed',
            error: stepError(
              checked.code,
              `precondition ${step.preconditions[checked.index]?.kind} failed: ${checked.message}`,
              `${step.id}/preconditions/${checked.index}`,
            ),
          });
        }
      }
      push({ role: 'system', content: settings.systemPrompt });
      push({
        role: 'user',
        content: stepMessage(
          plan,
          step,
          context.dependencies,
          definitions.map((definition) => definition.name),
          { estimator, maxDependencyTokens: limits.maxToolResultTokens },
        ),
      });
    } else {
      // Rebuild the conversation from the journal; the last answer is processed again, its
      // completed tool calls replayed from their journaled results.
      const last = replayed.at(-1) as ModelCallEvent;
      for (const event of replayed) {
        const recorded = event.request as RecordedRequest;
        const response = event.response as ChatResponse;
        conversation.push(...recorded.appended);
        conversation.push(assistantMessage(response));
        usage = addUsage(usage, event.usage);
        if (event === last) continue;
        // Earlier turns' results stay available to output_matches; the last turn is processed below.
        for (const index of response.toolCalls.keys()) {
          const execution = replay?.executions.get(
            deriveExecutionId(kernel.runId, step.id, attempt, `t${event.turn}.c${index}`),
          );
          if (execution?.status === 'succeeded') toolOutputs.push(render(execution.output));
        }
      }
      Object.assign(state, (last.request as RecordedRequest).loop);
      turn = last.turn;
      appended = [];
      await handleResponse(last.response as ChatResponse);
    }

    while (true) {
      if (signal.aborted) throw signal.reason;
      if (turn >= maxTurns) {
        throw limitReached(
          'turns',
          maxTurns,
          failure(ErrorCodes.TURN_LIMIT, `the step used all of its ${maxTurns} turns without completing`),
        );
      }
      if (limits.tokenBudget !== undefined && (usage?.totalTokens ?? 0) >= limits.tokenBudget) {
        throw limitReached(
          'token-budget',
          usage?.totalTokens ?? 0,
          failure(
            ErrorCodes.TOKEN_BUDGET,
            `the step spent ${usage?.totalTokens ?? 0} tokens, its budget is ${limits.tokenBudget}`,
          ),
        );
      }
      turn++;
      const response = await callModel();
      conversation.push(assistantMessage(response));
      await handleResponse(response);
    }
  } catch (thrown) {
    if (thrown instanceof StepEnd) return finish(thrown.outcome);
    if (signal.aborted) {
      const timedOut = isTimeoutReason(signal.reason);
      return finish({
        status: timedOut ? 'failed' : 'cancelled',
        error: timedOut
          ? stepError(ErrorCodes.STEP_TIMEOUT, `step ${step.id} timed out after ${step.timeoutMs} ms`, step.id)
          : stepError(
              ErrorCodes.STEP_CANCELLED,
              `cancelled: ${signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'run cancelled')}`,
              step.id,
            ),
      });
    }
    if (StepwiseError.isInstance(thrown)) {
      // A store that refuses the journal cannot record a step end either.
      if (thrown.code.startsWith('E5')) throw thrown;
      if (thrown.code === ErrorCodes.TOKEN_BUDGET) {
        journal.emit({ type: 'limit-reach', stepId: step.id, limit: 'token-budget', value: limits.maxContextTokens });
      }
      return finish({ status: 'failed', error: { ...toStepError(thrown), location: step.id } });
    }
    if (thrown instanceof ModelError) return finish({ status: 'failed', error: toStepError(thrown) });
    return finish({ status: 'failed', error: { ...toStepError(thrown, ErrorCodes.MODEL_ERROR), location: step.id } });
  }
}
