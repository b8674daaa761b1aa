// A host application that brings a third-party plugin it did not write: it imports the package
// by name (as a host does from its configuration), registers it, and runs a plan with it.
// Usage: node run-host.mjs        (prints each step, then the run result as one JSON line)
import { ErrorCodes, StepwiseError, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';

/**
 * Imports a plugin package. Its default export is a plugin (`definePlugin(...)`) or a function
 * that takes the host's options and returns one (or a promise of one).
 */
async function loadPlugin(specifier, options) {
  let module;
  try {
    module = await import(specifier);
  } catch (error) {
    throw new StepwiseError(ErrorCodes.PLUGIN_INVALID, `cannot import plugin "${specifier}": ${error.message}`, {
      location: specifier,
      cause: error,
    });
  }
  const exported = module.default;
  const plugin = typeof exported === 'function' ? await exported(options) : exported;
  if (!plugin || typeof plugin.name !== 'string' || !Array.isArray(plugin.tools)) {
    throw new StepwiseError(ErrorCodes.PLUGIN_INVALID, `"${specifier}" does not export a Stepwise plugin`, {
      location: specifier,
    });
  }
  return plugin;
}

const registry = new ToolRegistry();
await registry.use(await loadPlugin('stepwise-plugin-hello'));

// A second, differently configured copy collides with the first (E602) unless it is renamed.
const { createHelloPlugin } = await import('stepwise-plugin-hello');
try {
  await registry.use(createHelloPlugin({ greeting: 'Hi' }));
} catch (error) {
  console.log(`without a prefix: ${error.code} ${error.message}`);
}
await registry.use(createHelloPlugin({ greeting: 'Hi' }), { prefix: 'hi_' });
console.log(
  `tools: ${registry
    .list()
    .map((tool) => tool.name)
    .join(', ')}`,
);

const plan = {
  id: 'plan_hello',
  version: 1,
  goal: 'Greet two people, then greet the first greeting',
  steps: [
    { id: 'ada', tool: 'hello', args: { name: 'Ada' } },
    { id: 'grace', tool: 'greet', args: { name: 'Grace', shout: true } },
    {
      id: 'echo',
      tool: 'hi_hello',
      dependsOn: ['ada', 'grace'],
      args: { name: { $ref: 'ada', pointer: '/greeting' } },
    },
  ],
};

const engine = dagEngine({ tools: registry });
try {
  const handle = engine.run(plan);
  for await (const event of handle) {
    if (event.type === 'step-end') {
      const { stepId, status, output, error } = event.result;
      console.log(`${stepId}: ${status} ${JSON.stringify(output ?? error)}`);
    }
  }
  const result = await handle.result;
  console.log(JSON.stringify({ status: result.status, outputs: result.steps.map((step) => step.output) }));
  process.exitCode = result.status === 'completed' ? 0 : 1;
} finally {
  // Runners call this when they close: every plugin's dispose(), in reverse order.
  await registry.dispose();
}
