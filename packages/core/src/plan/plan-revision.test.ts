import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { planReviseEvent, startedStepIds } from '../journal/apply-plan-revise.js';
import { foldRun } from '../journal/fold-run.js';
import { RunJournal } from '../journal/journal.js';
import { readAll } from '../journal/run-store.js';
import { MemoryStore } from '../store/memory-store.js';
import { createTestTools } from '../testing/fixtures.js';
import { diffPlans } from './plan-diff.js';
import { approvePlan, planDigest, verifyAuthorization } from './plan-digest.js';
import { PLAN_REVISION_CONFLICT, type PlanEdit, replaceRemainingSteps, revisePlan } from './plan-revision.js';
import { type Plan, PlanSchema, planJsonSchema } from './plan-schema.js';

const note = (id: string, dependsOn?: string[]) => ({
  id,
  tool: 'note',
  args: { text: id },
  ...(dependsOn ? { dependsOn } : {}),
});

const plan: Plan = {
  id: 'plan_notes',
  version: 1,
  goal: 'write notes',
  steps: [note('a'), note('b', ['a']), note('c', ['b']), note('d')],
};

function thrown(action: () => unknown): StepwiseError {
  try {
    action();
  } catch (error) {
    if (StepwiseError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a StepwiseError');
}

describe('plan digests without revision fields', () => {
  it('stay what they were before revisions existed, also after parsing', () => {
    // Computed from this plan before `revision` and `parentDigest` were added to the schema.
    const approved = {
      id: 'plan_001',
      version: 1,
      goal: 'Bump the version',
      steps: [
        { id: 'read', tool: 'file_read', args: { path: 'package.json' } },
        {
          id: 'write',
          tool: 'file_write',
          dependsOn: ['read'],
          args: { path: 'out.json', contents: { $ref: 'read', pointer: '/contents' } },
          requiresApproval: true,
        },
      ],
    };
    const digest = '2e1721be2c710416be3910ee6e212a11985cd94f46872ae9dfcd4474ea363793';
    expect(planDigest(approved)).toBe(digest);
    expect(planDigest(PlanSchema.parse(approved))).toBe(digest);
    expect(Object.keys(PlanSchema.parse(approved))).not.toContain('revision');
  });

  it('are offered to editors and models in the JSON Schema', () => {
    const properties = planJsonSchema().properties as Record<string, unknown>;
    expect(properties).toHaveProperty('revision');
    expect(properties).toHaveProperty('parentDigest');
    expect(PlanSchema.safeParse({ ...plan, parentDigest: 'abc' }).success).toBe(false);
  });
});

describe('revisePlan', () => {
  it('edits, adds, moves and removes pending steps, reports the diff and leaves the input alone', () => {
    const before = structuredClone(plan);
    const edits: PlanEdit[] = [
      { op: 'edit', stepId: 'c', changes: { args: { text: 'C' }, description: 'louder' } },
      { op: 'add', step: note('b2', ['b']), after: 'b' },
      { op: 'move', stepId: 'd', before: 'a' },
      { op: 'remove', stepId: 'c' },
      { op: 'add', step: note('e', ['b2']) },
    ];
    const revision = revisePlan(plan, edits, { started: ['a'] });

    expect(plan).toEqual(before);
    expect(revision.plan.steps.map((step) => step.id)).toEqual(['d', 'a', 'b', 'b2', 'e']);
    expect(revision.revision).toBe(1);
    expect(revision.plan.revision).toBe(1);
    expect(revision.parentDigest).toBe(planDigest(plan));
    expect(revision.plan.parentDigest).toBe(planDigest(plan));
    expect(revision.digest).toBe(planDigest(revision.plan));
    expect(revision.diff).toEqual([
      { kind: 'step-removed', stepId: 'c', index: 2, step: note('c', ['b']) },
      { kind: 'step-added', stepId: 'b2', index: 3, step: note('b2', ['b']) },
      { kind: 'step-added', stepId: 'e', index: 4, step: note('e', ['b2']) },
      { kind: 'step-moved', stepId: 'd', from: 3, to: 0 },
    ]);
  });

  it('drops a field set to undefined and reports changed fields by name', () => {
    const revision = revisePlan(plan, [
      { op: 'edit', stepId: 'b', changes: { dependsOn: undefined, critical: false } },
    ]);
    expect(revision.plan.steps[1]).toEqual({ id: 'b', tool: 'note', args: { text: 'b' }, critical: false });
    expect(revision.diff).toEqual([
      expect.objectContaining({ kind: 'step-changed', stepId: 'b', fields: ['critical', 'dependsOn'] }),
    ]);
  });

  it('chains digests: each revision names its parent, and the first approval does not cover a revision', () => {
    const authorization = approvePlan(plan, { by: 'ana' });
    const first = revisePlan(plan, [{ op: 'remove', stepId: 'd' }]);
    const second = revisePlan(first.plan, [{ op: 'add', step: note('z') }]);

    expect(second.revision).toBe(2);
    expect(second.parentDigest).toBe(first.digest);
    expect(new Set([planDigest(plan), first.digest, second.digest]).size).toBe(3);
    expect(() => verifyAuthorization(plan, authorization)).not.toThrow();
    expect(thrown(() => verifyAuthorization(first.plan, authorization)).code).toBe(ErrorCodes.PLAN_MISMATCH);
    // The digest seals the chain: the same steps with another parent hash differently.
    expect(planDigest({ ...second.plan, parentDigest: planDigest(plan) })).not.toBe(second.digest);
    // Same edits on the same plan give the same revision: revisions are deterministic.
    expect(revisePlan(plan, [{ op: 'remove', stepId: 'd' }]).digest).toBe(first.digest);
  });

  it.each<[string, PlanEdit, number]>([
    ['edit', { op: 'edit', stepId: 'b', changes: { args: { text: 'x' } } }, 1],
    ['replace', { op: 'replace', step: note('a') }, 0],
    ['remove', { op: 'remove', stepId: 'a' }, 0],
    ['move', { op: 'move', stepId: 'b', after: 'd' }, 1],
  ])('refuses to %s a started step with E005 at its JSON path', (_name, edit, index) => {
    const error = thrown(() => revisePlan(plan, [edit], { started: ['a', 'b'] }));
    expect(error.code).toBe(PLAN_REVISION_CONFLICT);
    expect(error.location).toBe(`/steps/${index}`);
    expect(error.message).toContain('already started');
  });

  it('names an edit of a step the plan does not have (E004) and a result that is not a valid plan (E001)', () => {
    const missing = thrown(() => revisePlan(plan, [{ op: 'move', stepId: 'd', after: 'nope' }]));
    expect(missing.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(missing.location).toBe('/edits/0/after');

    const cycle = thrown(() => revisePlan(plan, [{ op: 'edit', stepId: 'a', changes: { dependsOn: ['c'] } }]));
    expect(cycle.code).toBe(ErrorCodes.PLAN_INVALID);
    const problems = cycle.details?.problems as { kind: string }[];
    expect(problems.map((problem) => problem.kind)).toContain('dependency-cycle');

    const orphan = thrown(() => revisePlan(plan, [{ op: 'remove', stepId: 'b' }]));
    expect(orphan.location).toBe('/steps/1/dependsOn/0');
  });

  it('checks tools and args when given the registry', () => {
    const tools = createTestTools().registry;
    const error = thrown(() =>
      revisePlan(plan, [{ op: 'add', step: { id: 'f', tool: 'note', args: { text: 5 } } }], { tools }),
    );
    expect(error.code).toBe(ErrorCodes.ARGUMENTS_INVALID);
    expect(error.location).toBe('/steps/4/args/text');
  });
});

describe('replaceRemainingSteps', () => {
  it('keeps the started steps and replaces every pending one', () => {
    const revision = replaceRemainingSteps(plan, [note('c', ['a']), note('x', ['c'])], { started: ['a', 'b'] });
    expect(revision.plan.steps.map((step) => step.id)).toEqual(['a', 'b', 'c', 'x']);
    expect(revision.diff.map((change) => `${change.kind}:${'stepId' in change ? change.stepId : ''}`)).toEqual([
      'step-removed:d',
      'step-changed:c',
      'step-added:x',
    ]);
  });

  it('refuses a new step that reuses a started step id', () => {
    const error = thrown(() => replaceRemainingSteps(plan, [note('b')], { started: ['a', 'b'] }));
    expect(error.code).toBe(PLAN_REVISION_CONFLICT);
    expect(error.location).toBe('/steps/1');
  });
});

describe('diffPlans', () => {
  it('explains a reorder with the fewest moves', () => {
    const reordered = { ...plan, steps: [plan.steps[3], plan.steps[0], plan.steps[1], plan.steps[2]] as Plan['steps'] };
    expect(diffPlans(plan, reordered)).toEqual([{ kind: 'step-moved', stepId: 'd', from: 3, to: 0 }]);
    expect(diffPlans(plan, { ...plan, goal: 'other' })).toEqual([{ kind: 'plan-changed', fields: ['goal'] }]);
    expect(diffPlans(plan, structuredClone(plan))).toEqual([]);
  });
});

describe('plan-revise in the journal', () => {
  async function journalWithRevision(tamper?: (event: ReturnType<typeof planReviseEvent>) => object) {
    const store = new MemoryStore();
    const journal = new RunJournal({ runId: 'run_revised', store });
    journal.emit({ type: 'run-start', planId: plan.id, planDigest: planDigest(plan), plan, engine: 'dag' });
    await journal.record({ type: 'step-start', stepId: 'a', tool: 'note', attempt: 1, executionId: 'ex_a' });
    const started = startedStepIds(foldRun(await readAll(store, 'run_revised')));
    expect([...started]).toEqual(['a']);
    const revision = revisePlan(
      plan,
      [
        { op: 'remove', stepId: 'd' },
        { op: 'add', step: note('e', ['a']) },
      ],
      {
        started,
      },
    );
    const event = planReviseEvent(revision, 'adjust:test', 'd is not needed');
    journal.emit((tamper ? tamper(event) : event) as typeof event);
    await journal.close();
    return { events: await readAll(store, 'run_revised'), revision };
  }

  it('is folded into the current plan, the revision list and the step states', async () => {
    const { events, revision } = await journalWithRevision();
    const run = foldRun(events);
    expect(run.plan).toEqual(revision.plan);
    expect(run.planDigest).toBe(revision.digest);
    expect(run.revisions).toHaveLength(1);
    expect(run.revisions[0]).toMatchObject({ revision: 1, by: 'adjust:test', reason: 'd is not needed' });
    expect([...run.steps.keys()].sort()).toEqual(['a', 'b', 'c', 'e']);
    expect(run.steps.get('a')?.status).toBe('running');
    expect(run.steps.get('e')?.status).toBe('pending');
    expect(JSON.parse(JSON.stringify(events.at(-1)))).toEqual(events.at(-1));
  });

  it.each([
    ['names another parent', { parentDigest: '0'.repeat(64) }],
    ['carries a plan that does not hash to its digest', { digest: 'f'.repeat(64) }],
  ])('stops the fold with E502 when a revision %s', async (_name, change) => {
    const { events } = await journalWithRevision((event) => ({ ...event, ...change }));
    const error = thrown(() => foldRun(events));
    expect(error.code).toBe(ErrorCodes.JOURNAL_CONFLICT);
    expect(error.location).toBe('run_revised#3');
  });
});
