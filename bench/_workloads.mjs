// The no-op workloads the engine benches share: a `read` tool that does nothing, and plans of it —
// a chain and a fan-out (1 → N → 1). `packages` is a checkout's (see _packages.mjs), so a
// before/after bench builds each checkout's own.

/** A registry with the one tool every plan here calls: `noop`, a `read` that returns `{}`. */
export function noopTools({ core }) {
  return new core.ToolRegistry([
    core.defineTool({
      name: 'noop',
      description: 'nothing',
      input: { type: 'object' },
      effect: 'read',
      execute: () => ({}),
    }),
  ]);
}

/** A chain of `steps` `noop` steps, each depending on the one before; empty args. */
export function noopChain({ testing }, steps) {
  const plan = testing.chainPlan(steps, 'noop');
  return { ...plan, steps: plan.steps.map((step) => ({ ...step, args: {} })) };
}

/** `root` → `steps - 2` independent steps → `join`, all `noop`. */
export function noopFanOut({ testing }, steps) {
  const middle = Array.from({ length: steps - 2 }, (_, index) => ({
    id: `m${index}`,
    tool: 'noop',
    dependsOn: ['root'],
  }));
  const last = { id: 'join', tool: 'noop', dependsOn: middle.map((step) => step.id) };
  return testing.makePlan([{ id: 'root', tool: 'noop' }, ...middle, last]);
}
