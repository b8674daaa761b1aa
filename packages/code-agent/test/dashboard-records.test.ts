import { fileURLToPath } from 'node:url';
import type {
  AttemptEndRecord,
  WorkspaceChangeList as DashboardChanges,
  FailingTestRecord as DashboardFailingTest,
  ValidationEndRecord,
  WorkspaceRollbackRecord,
} from '@stepwise/dashboard/report';
import ts from 'typescript';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type {
  AttemptEndEvent,
  FailingTestRecord,
  ValidationEndEvent,
  WorkspaceChangeList,
  WorkspaceRollbackEvent,
} from '../src/index.js';

// The dashboard reads the code agent's events through records of its own (it cannot depend on this
// package, whose tests depend on it). Each event must be assignable to its record, so the dashboard
// reads every event the code agent journals, and the record must name every field of the event, so a
// field added here is added there. Checked by `tsc` on this file, which the test below runs (and the
// package's typecheck).

expectTypeOf<AttemptEndEvent>().toExtend<AttemptEndRecord>();
expectTypeOf<keyof AttemptEndEvent>().toEqualTypeOf<keyof AttemptEndRecord>();

expectTypeOf<ValidationEndEvent>().toExtend<ValidationEndRecord>();
expectTypeOf<keyof ValidationEndEvent>().toEqualTypeOf<keyof ValidationEndRecord>();

expectTypeOf<WorkspaceRollbackEvent>().toExtend<WorkspaceRollbackRecord>();
expectTypeOf<keyof WorkspaceRollbackEvent>().toEqualTypeOf<keyof WorkspaceRollbackRecord>();

expectTypeOf<WorkspaceChangeList>().toExtend<DashboardChanges>();
expectTypeOf<keyof WorkspaceChangeList>().toEqualTypeOf<keyof DashboardChanges>();

expectTypeOf<FailingTestRecord>().toExtend<DashboardFailingTest>();
expectTypeOf<keyof FailingTestRecord>().toEqualTypeOf<keyof DashboardFailingTest>();

describe("the dashboard's records of the code agent's events", () => {
  it('take every event as it is journaled and name all its fields (tsc --strict on this file)', () => {
    const config = ts.getParsedCommandLineOfConfigFile(
      fileURLToPath(new URL('../tsconfig.json', import.meta.url)),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => expect.fail(String(diagnostic.messageText)) },
    );
    const program = ts.createProgram([fileURLToPath(import.meta.url)], { ...config?.options, noEmit: true });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    expect(problems).toEqual([]);
  }, 120_000);
});
