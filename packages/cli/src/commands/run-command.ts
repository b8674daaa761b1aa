import {
  type ApprovalHandler,
  ErrorCodes,
  type PlanAuthorization,
  type RunHandle,
  type RunResult,
  readVerifiedJournal,
  StepwiseError,
  serializeEvent,
} from '@stepwise/core';
import { resultFromFold, sleep } from '@stepwise/core/engine';
import { type FoldedRun, foldRun } from '@stepwise/core/store';
import { formatDuration } from '@stepwise/dashboard/report';
import { createTtyApprovalHandler } from '../approval-prompt.js';
import { choice, type OptionSpecs, positiveInteger, STORE_OPTIONS } from '../command-arguments.js';
import { createRunner, type EngineName, openSqliteStore, type Runner } from '../create-runner.js';
import { ExitCodes, exitCodeForResult } from '../exit-codes.js';
import { formatPlanProblems } from '../format-plan-problems.js';
import { LiveView } from '../live-view.js';
import { readJsonFile } from '../read-plan-file.js';
import { type ConfigOverrides, runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { writeSafely } from '../terminal.js';
import { type CommandContext, commandJournalKey, loadCommandConfig, print, printError } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';
import { CODE_AGENT_ENGINE, resumeCodeAgentRun } from './solve-command.js';

const ENGINES: readonly EngineName[] = ['sequential', 'dag', 'agentic'];
const APPROVE_MODES = ['auto', 'prompt', 'deny', 'pause'] as const;
type ApproveMode = (typeof APPROVE_MODES)[number];

const sharedOptions = {
  ...STORE_OPTIONS,
  approve: { type: 'string' },
  concurrency: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

const runOptions = {
  ...sharedOptions,
  engine: { type: 'string', short: 'e' },
  authorization: { type: 'string', short: 'a' },
} as const satisfies OptionSpecs;

const resumeOptions = {
  ...sharedOptions,
  retry: { type: 'string', multiple: true },
  skip: { type: 'string', multiple: true },
  by: { type: 'string' },
  reason: { type: 'string' },
  authorization: { type: 'string', short: 'a' },
} as const satisfies OptionSpecs;

type Values = Record<string, string | boolean | undefined>;

/** `--retry` / `--skip` (repeatable), `--by`, `--reason`, as core's resume options. */
function continuationFlags(values: Values) {
  const list = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : []);
  return {
    retry: list(values.retry),
    skip: list(values.skip),
    ...(typeof values.by === 'string' ? { by: values.by } : {}),
    ...(typeof values.reason === 'string' ? { reason: values.reason } : {}),
  };
}

interface Presentation {
  /** JSONL on stdout, no prompts. */
  readonly json: boolean;
  /** A person can answer prompts. */
  readonly interactive: boolean;
}

function presentation(context: CommandContext, values: Values): Presentation {
  const json = values.json === true || context.io.stdout.isTTY !== true;
  return { json, interactive: !json && context.io.stdin.isTTY === true };
}

/** The handler `--approve` asks for; `undefined` means the configured non-interactive fallback. */
function approvalHandler(
  mode: ApproveMode | undefined,
  shown: Presentation,
  tty: () => ApprovalHandler,
): ApprovalHandler | undefined {
  if (mode === 'auto') return async () => ({ decision: 'approve', by: 'stepwise --approve auto' });
  if (mode === 'deny') return async () => ({ decision: 'deny', by: 'stepwise --approve deny' });
  if (mode === 'pause') return undefined;
  return shown.interactive ? tty() : undefined;
}

/** What a run command needs once it has a runner: consume the handle, show it, pick the exit code. */
async function follow(
  context: CommandContext,
  options: {
    readonly runner: Runner;
    readonly database: string;
    readonly shown: Presentation;
    readonly view: LiveView | undefined;
    readonly start: () => RunHandle;
    /** Events at or below this seq were printed by an earlier process (resume). */
    readonly afterSeq?: number;
    readonly controller: AbortController;
  },
): Promise<number> {
  const { shown, view, controller } = options;
  let handle: RunHandle | undefined;
  let interrupts = 0;
  const onSigint = () => {
    interrupts += 1;
    if (interrupts > 1) {
      view?.stop();
      process.exit(130);
    }
    // Printed above the live view, which is then redrawn below it.
    view?.pause();
    printError(context, 'stepwise: cancelling the run (Ctrl-C again to quit at once)…');
    view?.resume();
    controller.abort(new Error('interrupted (Ctrl-C)'));
    handle?.cancel('interrupted (Ctrl-C)');
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  try {
    handle = options.start();
    // A running command's output and a model's answer, shown under their step as they arrive.
    if (view) handle.onLive((event) => view.live(event));
    view?.start();
    const consume = (async () => {
      for await (const event of handle as RunHandle) {
        if (view) view.update(event);
        else if (event.seq > (options.afterSeq ?? 0)) writeSafely(context.io.stdout, `${serializeEvent(event)}\n`);
      }
    })();
    let result: RunResult;
    try {
      result = await handle.result;
    } finally {
      await consume.catch(() => undefined);
      view?.stop();
    }
    const code = exitCodeForResult(result);
    summarize(context, result, code, options.database, shown);
    return code;
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
  }
}

/** At most this many failed steps are named in the summary; the rest are counted. */
const SUMMARY_STEPS = 10;
/** A failed step's message is cut to its first line and this many characters. */
const SUMMARY_MESSAGE_LENGTH = 200;

function firstLine(message: string): string {
  const [line = ''] = message.split('\n');
  const characters = [...line];
  if (characters.length > SUMMARY_MESSAGE_LENGTH) return `${characters.slice(0, SUMMARY_MESSAGE_LENGTH - 1).join('')}…`;
  return line.length < message.trimEnd().length ? `${line} …` : line;
}

/**
 * One line per failed or denied step, `id (tool): CODE message`, for both summaries (the terminal's
 * and the one on stderr beside JSONL); after SUMMARY_STEPS steps, how many more.
 */
function failedStepLines(result: RunResult, highlight: (text: string) => string = (text) => text): string[] {
  const failures = result.steps.filter((step) => step.status === 'failed' || step.status === 'denied');
  const lines = failures.slice(0, SUMMARY_STEPS).map((step) => {
    const tool = step.tool ? ` (${step.tool})` : ' (goal step)';
    const error = step.error ? `${step.error.code} ${firstLine(step.error.message)}` : step.status;
    return `${highlight(step.stepId)}${tool}: ${error}`;
  });
  const more = failures.length - SUMMARY_STEPS;
  if (more > 0) lines.push(`… and ${more} more failed step${more === 1 ? '' : 's'}: stepwise show ${result.runId}`);
  return lines;
}

function summarize(context: CommandContext, result: RunResult, code: number, database: string, shown: Presentation) {
  const { palette } = context;
  const counts = new Map<string, number>();
  for (const step of result.steps) counts.set(step.status, (counts.get(step.status) ?? 0) + 1);
  const countText = [...counts].map(([status, count]) => `${count} ${status}`).join(', ') || 'no step ran';
  if (shown.json) {
    printError(
      context,
      `stepwise: run ${result.runId} ${result.status} in ${formatDuration(result.durationMs)} (${countText}); exit ${code}`,
    );
    for (const line of failedStepLines(result)) printError(context, `stepwise:   ${line}`);
    return;
  }
  const icon = result.status === 'completed' ? palette.green('✓') : palette.red('✗');
  print(
    context,
    `${icon} ${palette.bold(result.status)} in ${formatDuration(result.durationMs)} — ${countText}${code === 0 ? '' : ` (exit ${code})`}`,
  );
  for (const line of failedStepLines(result, palette.red)) print(context, `  ${line}`);
  print(context, palette.gray(`  journal ${database} · run ${result.runId}`));
  print(context, palette.gray(`  stepwise show ${result.runId} · stepwise report ${result.runId}`));
}

function overridesFrom(context: CommandContext, values: Values, engine: EngineName | undefined): ConfigOverrides {
  const concurrency = positiveInteger('run', 'concurrency', values.concurrency);
  return {
    cwd: context.io.cwd,
    ...(engine ? { engine } : {}),
    ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
    ...(typeof values.db === 'string' ? { database: values.db } : {}),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(values.approve === 'pause' ? { nonInteractive: 'pause' as const } : {}),
  };
}

const APPROVE_HELP = `      --approve M        auto: approve every question; deny: deny every question;
                         prompt (default in a TTY): ask [a]pprove [d]eny [v]iew [s]kip.
                         Without a TTY nobody is asked: the configured nonInteractive
                         fallback applies (default deny). A policy "deny" is never overridden.
                         pause: ask nobody now; the run ends waiting (exit 35) with its
                         questions journaled: stepwise pending, stepwise respond, stepwise resume.`;

export const runCommand: CommandDefinition = {
  name: 'run',
  summary: 'run a plan (live view in a terminal, JSONL otherwise)',
  positionals: { min: 1, max: 1, names: '<plan.json>' },
  options: runOptions,
  help: `Usage: stepwise run <plan.json> [--engine E] [--config F] [--workspace DIR] [--db F]
                    [--authorization F] [--approve auto|prompt|deny|pause] [--concurrency N] [--json]

Runs the plan with the configured engine, tools and journal. The plan file is JSON; comments and
trailing commas are allowed (JSONC). In a terminal: a live view of the steps and interactive
approval prompts (with a diff for file writes and edits). With --json or when stdout is not a
terminal: one RunEvent per line (JSONL) on stdout, no prompts, and a summary on stderr: the run's
status, then each failed or denied step with its tool, error code and message.

Options:
  -e, --engine E         sequential (strict; needs --authorization), dag or agentic
  -c, --config F         configuration file (default: stepwise.config.* here or above)
  -w, --workspace DIR    the directory tools may touch (default: the configuration's)
      --db F             the SQLite journal (default: <workspace>/.stepwise/stepwise.db)
  -a, --authorization F  the file written by stepwise approve
${APPROVE_HELP}
      --concurrency N    steps at once (dag, agentic)
      --json             JSONL events on stdout, no live view, no prompts

Exit codes: 0 completed, 1 general failure, 2 invalid input, 30 step failed, 31 turn limit,
32 sandbox violation, 33 approval denied, 34 step timeout, 35 waiting for an answer.

Examples:
  stepwise run plan.json
  stepwise run plan.json --json > events.jsonl
  stepwise approve plan.json --by alice && stepwise run plan.json -e sequential -a plan.approval.json`,
  async run(context, { values, positionals }) {
    const file = positionals[0] as string;
    const engineFlag = choice<EngineName>('run', 'engine', values.engine, ENGINES);
    const approve = choice<ApproveMode>('run', 'approve', values.approve, APPROVE_MODES);
    const planFile = await readJsonFile(file, 'plan', context.io.cwd);
    const authorization =
      typeof values.authorization === 'string'
        ? ((await readJsonFile(values.authorization, 'authorization', context.io.cwd)).value as PlanAuthorization)
        : undefined;
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const shown = presentation(context, values);
    let view: LiveView | undefined;
    const controller = new AbortController();
    const overrides = overridesFrom(context, values, engineFlag);
    const { workspace } = runnerOptionsFromConfig(loaded, overrides);
    const handler = approvalHandler(approve, shown, () =>
      createTtyApprovalHandler({
        io: context.io,
        palette: context.palette,
        workspace,
        get view() {
          return view;
        },
        onInterrupt: () => controller.abort(new Error('interrupted at an approval prompt')),
      }),
    );
    const options = runnerOptionsFromConfig(loaded, { ...overrides, ...withHandler(handler) });
    const runner = await createRunner({ ...options, journalKey: await commandJournalKey(context) });
    try {
      const validation = runner.validate(planFile.value);
      if (!validation.ok) {
        for (const line of formatPlanProblems(planFile, validation.problems)) printError(context, line);
        printError(context, `${file}: not run, the plan has ${validation.problems.length} problem(s)`);
        return ExitCodes.INVALID_INPUT;
      }
      if (runner.engineName === 'sequential' && !authorization) {
        throw new StepwiseError(
          ErrorCodes.NOT_AUTHORIZED,
          `the sequential engine runs approved plans only: stepwise approve ${file} --by NAME, then pass --authorization`,
          { location: '/authorization' },
        );
      }
      const plan = validation.plan;
      if (!shown.json)
        view = new LiveView({ plan, output: context.io.stdout, palette: context.palette, engine: runner.engineName });
      return await follow(context, {
        runner,
        database: options.database,
        shown,
        view,
        controller,
        start: () =>
          runner.run(plan, {
            signal: controller.signal,
            ...(authorization ? { authorization } : {}),
          }),
      });
    } finally {
      await runner.close();
    }
  },
};

function withHandler(handler: ApprovalHandler | undefined): Pick<ConfigOverrides, 'approvalHandler'> {
  return handler ? { approvalHandler: handler } : {};
}

/**
 * The result of a run that ended and that resume leaves as it is: nothing named to retry or skip,
 * and not cancelled or waiting (those continue as they are). `undefined` when resume goes on.
 */
function endedForGood(folded: FoldedRun, continuation: ReturnType<typeof continuationFlags>): RunResult | undefined {
  const continues =
    continuation.retry.length > 0 ||
    continuation.skip.length > 0 ||
    folded.status === 'cancelled' ||
    folded.status === 'waiting';
  return continues ? undefined : resultFromFold(folded);
}

/** `--authorization F` as resume's option: the approval read from its file. */
async function authorizationOption(
  context: CommandContext,
  values: Values,
): Promise<{ authorization?: PlanAuthorization }> {
  if (typeof values.authorization !== 'string') return {};
  const { value } = await readJsonFile(values.authorization, 'authorization', context.io.cwd);
  return { authorization: value as PlanAuthorization };
}

/**
 * Runs `attempt` again, a second apart, while another process holds the run's lease (or one that
 * died, until its lease expires), up to `deadline`; says so once.
 */
async function whileLeased(
  context: CommandContext,
  attempt: () => Promise<number>,
  wait: { runId: string; deadline: number; signal: AbortSignal; onRetry: () => void },
): Promise<number> {
  let warned = false;
  while (true) {
    try {
      return await attempt();
    } catch (error) {
      const leased = StepwiseError.isInstance(error) && error.code === ErrorCodes.LEASE_CONFLICT;
      if (!leased || Date.now() > wait.deadline || wait.signal.aborted) throw error;
      if (!warned) {
        printError(
          context,
          `stepwise: ${wait.runId} is held by another process (or by one that died, until its lease expires); waiting…`,
        );
        warned = true;
      }
      wait.onRetry();
      await sleep(1_000);
    }
  }
}

/** A code-agent run resumes with the code agent (its attempts, validation and checkpoints). */
function resumeSolveRun(
  context: CommandContext,
  values: Values,
  loaded: Awaited<ReturnType<typeof loadCommandConfig>>,
  store: Awaited<ReturnType<typeof openSqliteStore>>,
  { runId, controller }: { readonly runId: string; readonly controller: AbortController },
): Promise<number> {
  return whileLeased(
    context,
    () => resumeCodeAgentRun(context, values, loaded, store, { runId, ...continuationFlags(values) }),
    {
      runId,
      deadline: Date.now() + (loaded.config.leaseTtlMs ?? 30_000) + 3_000,
      signal: controller.signal,
      onRetry: () => undefined,
    },
  );
}

export const resumeCommand: CommandDefinition = {
  name: 'resume',
  summary: 'continue a run whose process died, or a failed, cancelled or waiting run',
  positionals: { min: 1, max: 1, names: '<runId>' },
  options: resumeOptions,
  help: `Usage: stepwise resume <runId> [--retry STEP]... [--skip STEP]... [--by WHO] [--reason TEXT]
                       [--authorization F] [--config F] [--workspace DIR] [--db F] [--approve auto|prompt|deny|pause] [--json]

Continues a run that stopped without ending (its process crashed or was killed) from its journal,
with the engine that started it: steps that succeeded are not
run again; a step that was in flight runs again if its tool is idempotent, else it fails as
interrupted (E309) unless allowRerunInterrupted is configured. If the process that ran it died,
its lease expires after leaseTtlMs (default 30 s); resume waits for that.

A cancelled run, or one waiting for an answer (see stepwise respond), continues as the same run:
the steps it did not finish run. A failed or partial run continues when you name what to do with
its failed steps: --retry runs a step again as a new attempt (the steps skipped because of it run
too); --skip ends it skipped, so its dependents run, except those that read its output (skipped,
E310). Both are journaled on the run (run-continue) beside the failed attempt. A completed run,
or an ended run with nothing named, is not run again: resume says so and exits with its code.

Options:
      --retry STEP       run this failed, denied, cancelled or skipped step again (repeatable)
      --skip STEP        end this step skipped and let its dependents run (repeatable)
      --by WHO           who continued the run (journaled)
      --reason TEXT      why (journaled)
  -a, --authorization F  an approval of the run's plan as it is now (stepwise approve <runId>): a strict
                         run whose plan was revised without one waits for it (journaled with run-resume)
${APPROVE_HELP}
      --json             JSONL events (only the new ones) on stdout, no prompts
      --db F             the SQLite journal (default: the configuration's)

Examples:
  stepwise resume run_0123abcd
  stepwise resume run_0123abcd --json
  stepwise resume run_0123abcd --retry build
  stepwise resume run_0123abcd --skip lint --by alice --reason "lint is advisory"`,
  async run(context, { values, positionals }) {
    const runId = positionals[0] as string;
    const approve = choice<ApproveMode>('resume', 'approve', values.approve, APPROVE_MODES);
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const shown = presentation(context, values);
    let view: LiveView | undefined;
    const controller = new AbortController();
    const base = runnerOptionsFromConfig(loaded, overridesFrom(context, values, undefined));
    const store = await openSqliteStore(base.database);
    const journalKey = await commandJournalKey(context);
    let runner: Runner | undefined;
    try {
      // A changed journal is refused here (E507), before it says the run ended or runs anything.
      const { events } = await readVerifiedJournal(store, runId, { journalKey });
      const folded = foldRun(events);
      if (events.length === 0 || !folded.plan) {
        throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in ${base.database}`, {
          location: runId,
        });
      }
      const continuation = continuationFlags(values);
      const authorization = await authorizationOption(context, values);
      const ended = endedForGood(folded, continuation);
      if (ended) {
        printError(
          context,
          `stepwise: run ${runId} already ended (${ended.status}); name its failed steps with --retry STEP or --skip STEP to continue it, or start a new run with stepwise run.`,
        );
        return exitCodeForResult(ended);
      }
      if (folded.engine === CODE_AGENT_ENGINE)
        return await resumeSolveRun(context, values, loaded, store, { runId, controller });
      const plan = folded.plan;
      const engine = (ENGINES as readonly string[]).includes(folded.engine)
        ? (folded.engine as EngineName)
        : base.engine;
      const handler = approvalHandler(approve, shown, () =>
        createTtyApprovalHandler({
          io: context.io,
          palette: context.palette,
          workspace: base.workspace,
          get view() {
            return view;
          },
          onInterrupt: () => controller.abort(new Error('interrupted at an approval prompt')),
        }),
      );
      const options = runnerOptionsFromConfig(loaded, {
        ...overridesFrom(context, values, engine),
        ...withHandler(handler),
      });
      runner = await createRunner({ ...options, store, journalKey });
      const active = runner;
      if (!shown.json) view = new LiveView({ plan, output: context.io.stdout, palette: context.palette, engine });
      return await whileLeased(
        context,
        () =>
          follow(context, {
            runner: active,
            database: options.database,
            shown,
            view,
            controller,
            afterSeq: folded.lastSeq,
            start: () => active.resume(runId, { signal: controller.signal, ...continuation, ...authorization }),
          }),
        {
          runId,
          deadline: Date.now() + (loaded.config.leaseTtlMs ?? 30_000) + 3_000,
          signal: controller.signal,
          onRetry: () => {
            if (view) view = new LiveView({ plan, output: context.io.stdout, palette: context.palette, engine });
          },
        },
      );
    } finally {
      if (runner) await runner.close();
      else await store.close();
    }
  },
};
