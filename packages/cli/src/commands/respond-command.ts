import {
  type ApprovalAnswer,
  ErrorCodes,
  type PendingApproval,
  pendingApprovals,
  respond,
  StepwiseError,
} from '@stepwise/core';
import { type OptionSpecs, STORE_OPTIONS, UsageError } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { alignColumns, fitWidth } from '../terminal.js';
import { type CommandContext, openCommandStore, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const pendingOptions = { ...STORE_OPTIONS, json: { type: 'boolean' } } as const satisfies OptionSpecs;

export const pendingCommand: CommandDefinition = {
  name: 'pending',
  summary: 'list the approval requests waiting runs wait on',
  positionals: { min: 0, max: 1, names: '[runId]' },
  options: pendingOptions,
  help: `Usage: stepwise pending [runId] [--json] [--db F]

Lists what runs that are waiting for a person (status waiting, exit code 35) wait on: approval
requests (the run, the request id, the step, the tool and its arguments) and questions of goal
steps (the model reported the step blocked, or a loop limit was reached). Answer one with
stepwise respond.

Examples:
  stepwise pending
  stepwise pending run_0123abcd --json`,
  async run(context: CommandContext, { values, positionals }) {
    const { store } = await openCommandStore(context, values);
    try {
      const runIds = positionals[0]
        ? [positionals[0]]
        : (await store.listRuns({ status: 'waiting', limit: 1000 })).map((run) => run.runId);
      const requests: PendingApproval[] = [];
      for (const runId of runIds) requests.push(...(await pendingApprovals(store, runId)));
      if (values.json) {
        print(context, JSON.stringify(requests, null, 2));
        return ExitCodes.COMPLETED;
      }
      if (requests.length === 0) {
        print(context, context.palette.gray('nothing is waiting for an answer'));
        return ExitCodes.COMPLETED;
      }
      const header = ['run', 'request', 'step', 'asks', 'about'].map((title) => context.palette.gray(title));
      const rows = requests.map((request) => [
        request.runId,
        request.requestId,
        request.stepId,
        request.kind === 'question' ? `question (${request.cause})` : `${request.tool} (${request.effect})`,
        fitWidth(request.kind === 'question' ? request.question : JSON.stringify(request.args), 80),
      ]);
      for (const line of alignColumns([header, ...rows])) print(context, line);
      return ExitCodes.COMPLETED;
    } finally {
      await store.close();
    }
  },
};

const respondOptions = {
  ...STORE_OPTIONS,
  step: { type: 'string' },
  request: { type: 'string' },
  approve: { type: 'boolean' },
  deny: { type: 'boolean' },
  skip: { type: 'boolean' },
  edit: { type: 'string' },
  answer: { type: 'string' },
  by: { type: 'string' },
  reason: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

function decisionOf(values: Record<string, unknown>): Pick<ApprovalAnswer, 'decision' | 'args' | 'answer'> {
  const chosen = (['approve', 'deny', 'skip'] as const).filter((flag) => values[flag] === true);
  const edit = typeof values.edit === 'string' ? values.edit : undefined;
  const answer = typeof values.answer === 'string' ? values.answer : undefined;
  if (chosen.length + (edit === undefined ? 0 : 1) + (answer === undefined ? 0 : 1) !== 1) {
    throw new UsageError('stepwise respond: give exactly one of --approve, --deny, --skip, --edit ARGS, --answer TEXT');
  }
  if (answer !== undefined) return { answer };
  if (edit === undefined) return { decision: chosen[0] as 'approve' | 'deny' | 'skip' };
  let args: unknown;
  try {
    args = JSON.parse(edit);
  } catch {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, '--edit needs the new args as a JSON object', {
      location: '--edit',
    });
  }
  return { decision: 'edit', args: args as Record<string, unknown> };
}

export const respondCommand: CommandDefinition = {
  name: 'respond',
  summary: "answer a waiting run's approval request or question",
  positionals: { min: 1, max: 1, names: '<runId>' },
  options: respondOptions,
  help: `Usage: stepwise respond <runId> (--step ID | --request ID)
                        (--approve | --deny | --skip | --edit ARGS | --answer TEXT)
                        [--by WHO] [--reason TEXT] [--json] [--db F]

Journals a person's answer to an approval request or a question of a waiting run (see stepwise
pending); then stepwise resume <runId> continues the run from there: --approve runs the step,
--deny ends it denied, --skip ends it skipped, --edit '{"path":"b.txt"}' runs it with these args
instead; --answer TEXT answers a goal step's question (the model reads it next and goes on).
An answer to a request that is unknown, stale or already answered, or to a run that is not
waiting, is refused (E411, exit 2); while another process holds the run it is refused with E501
(exit 1): answer again.

Examples:
  stepwise respond run_0123abcd --step deploy --approve --by alice
  stepwise respond run_0123abcd --step deploy --edit '{"target":"staging"}' --reason "not prod yet"
  stepwise respond run_0123abcd --step fix --answer "the token is in .env.local"`,
  async run(context: CommandContext, { values, positionals }) {
    const runId = positionals[0] as string;
    const decided = decisionOf(values);
    const step = typeof values.step === 'string' ? values.step : undefined;
    const request = typeof values.request === 'string' ? values.request : undefined;
    const { store, journalKey } = await openCommandStore(context, values);
    try {
      const answer = {
        ...decided,
        ...(step === undefined ? {} : { stepId: step }),
        ...(request === undefined ? {} : { requestId: request }),
        by: typeof values.by === 'string' ? values.by : (process.env.USER ?? 'stepwise respond'),
        ...(typeof values.reason === 'string' ? { reason: values.reason } : {}),
      };
      const event = await respond(store, runId, answer, { journalKey });
      if (values.json) print(context, JSON.stringify(event));
      else
        print(
          context,
          `${event.decision} journaled for step ${event.stepId} of ${runId}; continue with: stepwise resume ${runId}`,
        );
      return ExitCodes.COMPLETED;
    } finally {
      await store.close();
    }
  },
};
