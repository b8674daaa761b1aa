import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generateReport } from '@stepwise/dashboard/report';
import { type OptionSpecs, STORE_OPTIONS } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { type CommandContext, openCommandStore, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  out: { type: 'string', short: 'o' },
} as const satisfies OptionSpecs;

export const reportCommand: CommandDefinition = {
  name: 'report',
  summary: 'write a self-contained HTML report of a run',
  positionals: { min: 1, max: 1, names: '<runId>' },
  options,
  help: `Usage: stepwise report <runId> [--out report.html] [--db F]

Writes one HTML file that needs nothing else (no network, no CDN): the plan's graph with step
statuses, a timeline with one bar per execution (retries visible, the critical path outlined),
and each step's arguments, output, stderr, errors, approvals and model turns on click.

Options:
  -o, --out FILE   where to write it (default: stepwise-report-<runId>.html)
      --db F       the SQLite journal (default: the configuration's)

Examples:
  stepwise report run_0123abcd --out report.html`,
  async run(context: CommandContext, { values, positionals }) {
    const runId = positionals[0] as string;
    const { store, journalKey } = await openCommandStore(context, values);
    try {
      const html = await generateReport(store, runId, { journalKey });
      const out = path.resolve(
        context.io.cwd,
        typeof values.out === 'string' ? values.out : `stepwise-report-${runId}.html`,
      );
      await writeFile(out, html);
      print(context, `${context.palette.green('✓')} report of ${runId} written to ${out}`);
      return ExitCodes.COMPLETED;
    } finally {
      await store.close();
    }
  },
};
