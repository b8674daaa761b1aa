import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { RunEvent, StepError } from '@stepwise/core';
import type {
  ModelCallEvent,
  StepEndEvent,
  StepStartEvent,
  ToolCallEvent,
  ToolResultEvent,
} from '@stepwise/core/store';

export interface OpenTelemetryListenerOptions {
  /** Where spans go: `trace.getTracer('stepwise')` from the host's SDK. */
  readonly tracer: Tracer;
  /**
   * Record tool arguments (`gen_ai.tool.call.arguments`) as they were journaled, that is after
   * redaction. Default false: spans carry ids, names, statuses, times and token usage only.
   */
  readonly recordContent?: boolean;
  /** Parent of each run span. Default: the context active when the run starts. */
  readonly parentContext?: () => Context;
}

/** A listener for `onEvent`: every event a run emits, already redacted. */
export type RunEventListener = (event: RunEvent) => void;

interface RunSpans {
  readonly run: Span;
  readonly steps: Map<string, Span>;
  /** A failed, retryable attempt's end: the step's end unless a retry follows (known only then). */
  readonly pendingEnds: Map<string, StepEndEvent>;
  /** Open attempt span per step; attempts end at their retry or at the step's end. */
  readonly attempts: Map<string, { attempt: number; span: Span }>;
  /** Open tool-call spans per execution id, oldest first (agentic steps call several tools in one attempt). */
  readonly tools: Map<string, Span[]>;
  /** The error code of the first step that failed: the run span's `error.type` if the run fails. */
  firstFailure?: string;
}

const at = (event: RunEvent) => new Date(event.at);

function within(parent: Span): Context {
  return trace.setSpan(context.active(), parent);
}

function fail(span: Span, error: StepError | undefined): void {
  if (!error) return;
  span.setAttribute('error.type', error.code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}

/** The GenAI conventions' finish reasons for Stepwise's (`tool-calls` → `tool_call`); others pass as they are. */
const FINISH_REASONS: Readonly<Record<string, string>> = {
  'tool-calls': 'tool_call',
  'content-filter': 'content_filter',
};

function finishReasonAttributes(response: unknown): Attributes {
  const reason = (response as { finishReason?: unknown } | undefined)?.finishReason;
  if (typeof reason !== 'string') return {};
  return { 'gen_ai.response.finish_reasons': [FINISH_REASONS[reason] ?? reason] };
}

/** `server.address` and `server.port` of the endpoint a model was called at (the scheme's port when the URL has none). */
function serverAttributes(endpoint: string | undefined): Attributes {
  if (!endpoint || !URL.canParse(endpoint)) return {};
  const url = new URL(endpoint);
  const port = url.port
    ? Number(url.port)
    : url.protocol === 'https:'
      ? 443
      : url.protocol === 'http:'
        ? 80
        : undefined;
  return {
    'server.address': url.hostname.replace(/^\[(.*)\]$/, '$1'),
    ...(port === undefined ? {} : { 'server.port': port }),
  };
}

/** `openai-compatible:qwen2.5-coder:7b` → provider `openai-compatible`, model `qwen2.5-coder:7b`. */
function modelAttributes(name: string): Attributes {
  const colon = name.indexOf(':');
  if (colon <= 0) return { 'gen_ai.request.model': name };
  return { 'gen_ai.provider.name': name.slice(0, colon), 'gen_ai.request.model': name.slice(colon + 1) };
}

/**
 * Turns a run's events into OpenTelemetry spans: `run <planId>` › `step <stepId>` › `attempt <n>`
 * › `execute_tool <tool>` and `chat <model>` (GenAI semantic conventions, token usage included).
 * Span times are the events' own times, so the trace shows the run as journaled. Pass it as
 * `onEvent` to any engine; events reach listeners after redaction, so spans hold no secrets.
 */
export function openTelemetryListener(options: OpenTelemetryListenerOptions): RunEventListener {
  const spans = new RunSpanBuilder(options);
  return (event) => spans.handle(event);
}

/** The spans of every run in flight, built from their events. */
class RunSpanBuilder {
  readonly #options: OpenTelemetryListenerOptions;
  readonly #runs = new Map<string, RunSpans>();

  constructor(options: OpenTelemetryListenerOptions) {
    this.#options = options;
  }

  private runOf(event: RunEvent): RunSpans {
    let spans = this.#runs.get(event.runId);
    if (!spans) {
      // Events of a run this listener did not see start (a resume in another process).
      const parent = this.#options.parentContext?.() ?? context.active();
      const run = this.#options.tracer.startSpan(
        `run ${event.runId}`,
        { startTime: at(event), attributes: { 'stepwise.run.id': event.runId } },
        parent,
      );
      spans = { run, steps: new Map(), pendingEnds: new Map(), attempts: new Map(), tools: new Map() };
      this.#runs.set(event.runId, spans);
    }
    return spans;
  }

  private stepOf(spans: RunSpans, stepId: string, event: RunEvent, tool?: string): Span {
    let step = spans.steps.get(stepId);
    if (!step) {
      step = this.#options.tracer.startSpan(
        `step ${stepId}`,
        {
          startTime: at(event),
          attributes: { 'stepwise.step.id': stepId, ...(tool ? { 'stepwise.tool.name': tool } : {}) },
        },
        within(spans.run),
      );
      spans.steps.set(stepId, step);
    }
    return step;
  }

  private parentOf(spans: RunSpans, stepId: string, attempt?: number): Span {
    const open = spans.attempts.get(stepId);
    if (open && (attempt === undefined || open.attempt === attempt)) return open.span;
    return spans.steps.get(stepId) ?? spans.run;
  }

  private endAttempt(spans: RunSpans, stepId: string, event: RunEvent, error?: StepError) {
    const open = spans.attempts.get(stepId);
    if (!open) return;
    fail(open.span, error);
    open.span.end(at(event));
    spans.attempts.delete(stepId);
  }

  private onStepStart(event: StepStartEvent) {
    const spans = this.runOf(event);
    spans.pendingEnds.delete(event.stepId);
    const step = this.stepOf(spans, event.stepId, event, event.tool);
    this.endAttempt(spans, event.stepId, event);
    const span = this.#options.tracer.startSpan(
      `attempt ${event.attempt}`,
      {
        startTime: at(event),
        attributes: {
          'stepwise.step.id': event.stepId,
          'stepwise.step.attempt': event.attempt,
          'stepwise.execution.id': event.executionId,
        },
      },
      within(step),
    );
    spans.attempts.set(event.stepId, { attempt: event.attempt, span });
  }

  private onToolCall(event: ToolCallEvent) {
    const spans = this.runOf(event);
    const span = this.#options.tracer.startSpan(
      `execute_tool ${event.tool}`,
      {
        startTime: at(event),
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': event.tool,
          // The model's id for the call; a plan's own tool step has none.
          ...(event.toolCallId ? { 'gen_ai.tool.call.id': event.toolCallId } : {}),
          'stepwise.execution.id': event.executionId,
          'stepwise.tool.effect': event.effect,
          ...(this.#options.recordContent ? { 'gen_ai.tool.call.arguments': JSON.stringify(event.args) } : {}),
        },
      },
      within(this.parentOf(spans, event.stepId, event.attempt)),
    );
    const queue = spans.tools.get(event.executionId) ?? [];
    queue.push(span);
    spans.tools.set(event.executionId, queue);
  }

  private onToolResult(event: ToolResultEvent) {
    const queue = this.runOf(event).tools.get(event.executionId);
    const span = queue?.shift();
    if (!span) return;
    span.setAttribute('stepwise.tool.status', event.status);
    fail(span, event.error);
    // The result carries the tool's own start and duration: the span covers exactly the call.
    span.end(new Date(Date.parse(event.startedAt) + event.durationMs));
  }

  private onModelCall(event: ModelCallEvent) {
    const spans = this.runOf(event);
    const end = Date.parse(event.at);
    const response = event.response as { model?: unknown } | undefined;
    const span = this.#options.tracer.startSpan(
      `chat ${modelAttributes(event.model)['gen_ai.request.model']}`,
      {
        startTime: new Date(end - event.latencyMs),
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          ...modelAttributes(event.model),
          ...(typeof response?.model === 'string' ? { 'gen_ai.response.model': response.model } : {}),
          ...finishReasonAttributes(response),
          ...serverAttributes(event.endpoint),
          ...(event.usage
            ? {
                'gen_ai.usage.input_tokens': event.usage.promptTokens,
                'gen_ai.usage.output_tokens': event.usage.completionTokens,
              }
            : {}),
          'stepwise.step.id': event.stepId,
          'stepwise.model.turn': event.turn,
        },
      },
      within(this.parentOf(spans, event.stepId, event.attempt)),
    );
    fail(span, event.error);
    span.end(new Date(end));
  }

  private onStepEnd(event: StepEndEvent) {
    const spans = this.runOf(event);
    const { result } = event;
    this.stepOf(spans, event.stepId, event, result.tool);
    this.endAttempt(spans, event.stepId, event, result.status === 'failed' ? result.error : undefined);
    // Engines end every attempt with step-end; a step-retry and step-start may follow a retryable failure.
    if (result.status === 'failed' && result.error?.retryable) spans.pendingEnds.set(event.stepId, event);
    else this.endStep(spans, event);
  }

  private endStep(spans: RunSpans, event: StepEndEvent) {
    const { result } = event;
    const step = this.stepOf(spans, event.stepId, event, result.tool);
    step.setAttributes({
      'stepwise.step.status': result.status,
      'stepwise.step.attempts': result.attempt,
      ...(result.usage
        ? {
            'gen_ai.usage.input_tokens': result.usage.promptTokens,
            'gen_ai.usage.output_tokens': result.usage.completionTokens,
          }
        : {}),
    });
    if (result.status === 'failed') {
      fail(step, result.error);
      spans.firstFailure ??= result.error?.code;
    }
    step.end(at(event));
    spans.steps.delete(event.stepId);
    spans.pendingEnds.delete(event.stepId);
  }

  private onRunEnd(event: RunEvent & { type: 'run-end' }) {
    const spans = this.runOf(event);
    for (const pending of [...spans.pendingEnds.values()]) this.endStep(spans, pending);
    for (const queue of spans.tools.values()) for (const span of queue) span.end(at(event));
    for (const { span } of spans.attempts.values()) span.end(at(event));
    for (const span of spans.steps.values()) span.end(at(event));
    spans.run.setAttributes({
      'stepwise.run.status': event.status,
      ...(event.usage
        ? {
            'gen_ai.usage.input_tokens': event.usage.promptTokens,
            'gen_ai.usage.output_tokens': event.usage.completionTokens,
          }
        : {}),
    });
    if (event.status === 'failed' || event.status === 'partial') {
      // The conventions' fallback when the cause is unknown (its steps ended in another process).
      const code = spans.firstFailure ?? '_OTHER';
      spans.run.setAttribute('error.type', code);
      spans.run.setStatus({ code: SpanStatusCode.ERROR, message: `run ${event.status} (${code})` });
    }
    spans.run.end(at(event));
    this.#runs.delete(event.runId);
  }

  handle(event: RunEvent): void {
    switch (event.type) {
      case 'run-start': {
        const spans = this.runOf(event);
        spans.run.updateName(`run ${event.planId}`);
        spans.run.setAttributes({
          'stepwise.plan.id': event.planId,
          'stepwise.plan.digest': event.planDigest,
          'stepwise.engine': event.engine,
        });
        return;
      }
      case 'run-resume':
        this.runOf(event).run.addEvent('run-resume', { 'stepwise.owner': event.owner }, at(event));
        return;
      case 'step-start':
        this.onStepStart(event);
        return;
      case 'tool-call':
        this.onToolCall(event);
        return;
      case 'tool-result':
        this.onToolResult(event);
        return;
      case 'model-call':
        this.onModelCall(event);
        return;
      case 'step-retry': {
        const spans = this.runOf(event);
        this.endAttempt(spans, event.stepId, event, event.error);
        spans.steps.get(event.stepId)?.addEvent('step-retry', { 'stepwise.retry.delay_ms': event.delayMs }, at(event));
        return;
      }
      case 'approval-request':
      case 'approval-decision':
      case 'limit-reach':
      case 'recovery-decision': {
        const spans = this.runOf(event);
        const attributes: Attributes =
          event.type === 'approval-decision'
            ? { 'stepwise.approval.decision': event.decision, 'stepwise.approval.source': event.source }
            : event.type === 'limit-reach'
              ? { 'stepwise.limit': event.limit, 'stepwise.limit.value': event.value }
              : event.type === 'recovery-decision'
                ? { 'stepwise.recovery.decision': event.decision }
                : { 'stepwise.tool.name': event.tool };
        this.parentOf(spans, event.stepId).addEvent(event.type, attributes, at(event));
        return;
      }
      case 'step-end':
        this.onStepEnd(event);
        return;
      case 'run-end':
        this.onRunEnd(event);
        return;
      default:
        return;
    }
  }
}
