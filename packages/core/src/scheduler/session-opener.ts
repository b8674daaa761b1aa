import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunResult } from '../journal/events.js';
import { type FoldedRun, foldRun } from '../journal/fold-run.js';
import type { RunJournal } from '../journal/journal.js';
import { journalKeyObject } from '../journal/journal-chain.js';
import { readVerifiedJournal } from '../journal/read-verified-journal.js';
import { redact } from '../journal/redact.js';
import type { RunStore } from '../journal/run-store.js';
import type { JournaledAnswers } from '../kernel/pause-approval.js';
import { planDigest } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { type PlanValidation, planInvalidError, validatePlan } from '../plan/validate-plan.js';
import type { ResumeOptions, RunOptions } from '../run/engine-options.js';
import { approvalState } from '../run/pending-approvals.js';
import { reopenRun, resultFromFold, type SessionOptions, startRun, stepResults } from '../run/run-session.js';
import { MemoryStore } from '../store/memory-store.js';
import { continuationOf, continueRun } from './continue-run.js';
import { buildDependencyGraph } from './dependency-graph.js';
import type { EnginePolicy } from './engine-policy.js';
import type { OpenedSession } from './launch-session.js';
import type { PolicyEngineSetup, SessionHooks } from './policy-engine.js';
import { askedAdjustHook, type RestoredStep, restoreSteps } from './resume-state.js';
import { RunScheduler } from './run-scheduler.js';

/** Opens sessions for one engine: starts a run, resumes one from its journal, or replays its end. */
export class SessionOpener {
  readonly store: RunStore;
  readonly #setup: PolicyEngineSetup;
  readonly #kernel: RunSchedulerKernel;
  readonly #session: SessionOptions;

  constructor(setup: PolicyEngineSetup) {
    const { options } = setup;
    checkEngineOptions(options);
    this.#setup = setup;
    this.store = options.store ?? new MemoryStore();
    this.#kernel = {
      registry: options.tools,
      ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
      ...(options.approvals ? { approvals: options.approvals } : {}),
      ...(options.defaultTimeoutMs === undefined ? {} : { defaultTimeoutMs: options.defaultTimeoutMs }),
      ...(options.log ? { log: options.log } : {}),
    };
    this.#session = {
      store: this.store,
      owner: options.owner,
      leaseTtlMs: options.leaseTtlMs,
      redactor: options.redactor || undefined,
      durability: options.durability || undefined,
      journalKey: options.journalKey,
      liveOutputToStore: options.liveOutputToStore,
    };
  }

  validate(plan: unknown, tools = true): PlanValidation {
    const { policy, options } = this.#setup;
    return validatePlan(plan, {
      ...(tools ? { tools: options.tools } : {}),
      engine: policy.validation,
      goalSteps: policy.goalSteps !== undefined,
      // Problems quote the plan and reach the host in a thrown error: redacted as the journal is.
      redactor: options.redactor ?? { redactText: redact },
    });
  }

  #scheduler(
    plan: Plan,
    journal: RunJournal,
    policy: EnginePolicy,
    startedAt: number,
    hooks?: SessionHooks,
    resumed?: { readonly run: FoldedRun; readonly answers: JournaledAnswers },
  ) {
    const answers = resumed?.answers;
    return new RunScheduler({
      plan,
      graph: buildDependencyGraph(plan),
      journal,
      kernel: answers && answers.size > 0 ? { ...this.#kernel, answers } : this.#kernel,
      policy,
      startedAt,
      observer: hooks?.observer || undefined,
      retainOutputs: this.#setup.options.retainOutputs || undefined,
      resumed: resumed?.run,
    });
  }

  /** Takes the lease of an existing run and continues it from its journal (or replays its end). */
  async reopen(runId: string, hooks: SessionHooks | undefined, options: ResumeOptions = {}): Promise<OpenedSession> {
    const { journal, run, plan, events } = await reopenRun({ ...this.#session, runId });
    try {
      const continuation = continuationOf(run, options);
      if (run.status !== 'running' && !continuation) {
        await journal.close();
        const finished = resultFromFold(run) as RunResult;
        hooks?.onOpened?.({ kind: 'replayed', plan, ended: finished.steps });
        return { finished, events };
      }
      if (run.engine !== this.#setup.policy.name) {
        throw new StepwiseError(
          ErrorCodes.CONFIG_INVALID,
          `run ${runId} was started by the "${run.engine}" engine; resume it with that engine`,
          { location: runId },
        );
      }
      const validation = this.validate(plan, this.#setup.policy.validation === 'sequential');
      if (!validation.ok) throw planInvalidError(validation.problems);
      this.#setup.verifyResume?.(validation.plan, options.authorization ?? run.authorization);
      if (continuation) await continueRun(journal, run, continuation);
      return this.#resumed(validation.plan, run, events, journal, hooks, options.authorization);
    } catch (error) {
      await journal.close().catch(() => undefined);
      throw error;
    }
  }

  #resumed(
    plan: Plan,
    run: FoldedRun,
    events: Parameters<typeof restoreSteps>[1],
    journal: RunJournal,
    hooks: SessionHooks | undefined,
    authorization: ResumeOptions['authorization'],
  ): OpenedSession {
    const { tools, allowRerunInterrupted } = this.#setup.options;
    const reconciles = (tool: string) => tools.get(tool)?.reconcile !== undefined;
    const runPolicy = this.#setup.policyFromJournal?.(run.options) ?? this.#setup.policy;
    // A session that asked no adjust hook skipped its adjustments by design: none is asked late.
    const adjusts = runPolicy.adjust !== undefined && askedAdjustHook(run.options, events);
    const allowRerun = allowRerunInterrupted ?? false;
    const state = restoreSteps(run, events, { allowRerun, reconciles, adjusts });
    const { answers } = approvalState(events);
    const steps = withEditedArgs(state.steps, answers);
    const startedAt = Date.parse(run.createdAt) || Date.now();
    const live = this.#scheduler(plan, journal, runPolicy, startedAt, hooks, { run, answers });
    const owner = journal.lease?.owner ?? this.#setup.options.owner ?? 'unknown';
    return {
      scheduler: live,
      execute: async () => {
        try {
          await journal.record({
            type: 'run-resume',
            owner,
            interrupted: state.interrupted,
            ...(authorization ? { authorization } : {}),
          });
        } catch (error) {
          await journal.close().catch(() => undefined);
          throw error;
        }
        hooks?.onOpened?.({ kind: 'resumed', plan, ended: stepResults(plan, run) });
        return live.execute(steps);
      },
    };
  }

  /** Starts a new run, or — when its id already has a journal — replays or resumes that run. */
  async open(
    plan: Plan,
    runId: string,
    known: boolean,
    runOptions: RunOptions,
    digest: string | undefined,
    hooks?: SessionHooks,
    second = false,
  ): Promise<OpenedSession> {
    const existing = known ? await this.store.getRun(runId) : undefined;
    if (existing) {
      const expected = digest ?? planDigest(plan);
      if (existing.planDigest !== expected) {
        throw new StepwiseError(
          ErrorCodes.PLAN_MISMATCH,
          `run ${runId} already exists for another plan (digest ${existing.planDigest}); a run id names one plan`,
          { location: '/runId', details: { expected: existing.planDigest, actual: expected } },
        );
      }
      if (existing.status !== 'running') {
        const { events } = await readVerifiedJournal(this.store, runId, this.#session);
        const finished = resultFromFold(foldRun(events, runId)) as RunResult;
        hooks?.onOpened?.({ kind: 'replayed', plan, ended: finished.steps });
        return { finished, events };
      }
      return this.reopen(runId, hooks);
    }
    const startedAt = Date.now();
    let journal: RunJournal;
    try {
      journal = await this.#begin(plan, runId, runOptions, digest);
    } catch (error) {
      // Another process started the same run between our look and our lease: join it as above.
      if (known && !second && StepwiseError.isInstance(error) && error.code === ErrorCodes.JOURNAL_CONFLICT) {
        return this.open(plan, runId, true, runOptions, digest, hooks, true);
      }
      throw error;
    }
    const live = this.#scheduler(plan, journal, this.#setup.policy, startedAt, hooks);
    hooks?.onOpened?.({ kind: 'started', plan, ended: [] });
    return { scheduler: live, execute: () => live.execute() };
  }

  #begin(plan: Plan, runId: string, runOptions: RunOptions, digest: string | undefined) {
    // Written out rather than spread from the session and conditional parts: every run pays for it.
    const session = this.#session;
    const journaled = this.#setup.journaledOptions;
    return startRun({
      store: session.store,
      owner: session.owner,
      leaseTtlMs: session.leaseTtlMs,
      redactor: session.redactor,
      durability: session.durability,
      journalKey: session.journalKey,
      liveOutputToStore: session.liveOutputToStore,
      runId,
      plan,
      engine: this.#setup.policy.name,
      authorization: runOptions.authorization,
      planDigest: digest || undefined,
      parentRunId: runOptions.parentRunId || undefined,
      options: journaled ? { ...journaled } : undefined,
    });
  }
}

type RunSchedulerKernel = ConstructorParameters<typeof RunScheduler>[0]['kernel'];

/** A person's `edit` answer replaces the step's args for the attempt that applies it. */
function withEditedArgs(
  steps: ReadonlyMap<string, RestoredStep>,
  answers: JournaledAnswers,
): ReadonlyMap<string, RestoredStep> {
  const edited = [...answers.values()].filter((answer) => answer.decision === 'edit' && answer.args);
  if (edited.length === 0) return steps;
  const copy = new Map(steps);
  for (const answer of edited) {
    const step = copy.get(answer.stepId);
    if (step) copy.set(answer.stepId, { ...step, args: answer.args });
  }
  return copy;
}

/** The options every engine shares, checked once: E601 naming the option. */
function checkEngineOptions(options: PolicyEngineSetup['options']): void {
  const invalid = (location: string, message: string) =>
    new StepwiseError(ErrorCodes.CONFIG_INVALID, message, { location });
  if (!options || typeof options !== 'object') throw invalid('options', 'engine options must be an object');
  if (!options.tools || typeof options.tools.get !== 'function') {
    throw invalid('tools', 'options.tools must be a ToolRegistry (new ToolRegistry([...]))');
  }
  const ttl = options.leaseTtlMs;
  if (ttl !== undefined && !(typeof ttl === 'number' && Number.isFinite(ttl) && ttl > 0)) {
    throw invalid('leaseTtlMs', `leaseTtlMs must be a positive number of milliseconds, got ${JSON.stringify(ttl)}`);
  }
  const retain = options.retainOutputs;
  if (retain !== undefined && retain !== 'all' && retain !== 'referenced') {
    throw invalid('retainOutputs', `retainOutputs must be 'all' or 'referenced', got ${JSON.stringify(retain)}`);
  }
  const durability = options.durability;
  if (durability !== undefined && durability !== 'step' && durability !== 'batched') {
    throw invalid('durability', `durability must be 'step' or 'batched', got ${JSON.stringify(durability)}`);
  }
  if (options.journalKey !== undefined) journalKeyObject(options.journalKey);
}
