// A type test, checked by the package's typecheck (`tsc -p packages/code-agent/tsconfig.json`): the
// dashboard reads the code agent's events through records of its own (it cannot depend on this
// package, whose tests depend on it). Each event must be assignable to its record, so the dashboard
// reads every event the code agent journals, and the record must name every field of the event, so
// a field added here is added there.
import type {
  AttemptEndRecord,
  WorkspaceChangeList as DashboardChanges,
  FailingTestRecord as DashboardFailingTest,
  ValidationEndRecord,
  WorkspaceRollbackRecord,
} from '@stepwise/dashboard/report';
import { expectTypeOf } from 'vitest';
import type {
  AttemptEndEvent,
  FailingTestRecord,
  ValidationEndEvent,
  WorkspaceChangeList,
  WorkspaceRollbackEvent,
} from '../src/index.js';

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
