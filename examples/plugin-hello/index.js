// A minimal third-party Stepwise plugin: plain ESM JavaScript, no build step.
// `@stepwise/core` is a peer dependency, so the plugin shares the host's copy of the kernel.
import { definePlugin, defineTool, ToolError } from '@stepwise/core';

/**
 * Builds the plugin. Hosts that take options from configuration call this; everyone else
 * uses the default export, which is `createHelloPlugin()`.
 *
 * @param {{ greeting?: string }} [options] `greeting` defaults to "Hello".
 */
export function createHelloPlugin(options = {}) {
  const greeting = options.greeting ?? 'Hello';

  const hello = defineTool({
    name: 'hello',
    description: 'Greets someone by name.',
    // A plain JSON Schema: the kernel validates arguments with it before `execute` runs (E202).
    input: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, description: 'Who to greet.' },
        shout: { type: 'boolean', default: false },
      },
      required: ['name'],
      additionalProperties: false,
    },
    output: {
      type: 'object',
      properties: { greeting: { type: 'string' } },
      required: ['greeting'],
    },
    effect: 'read',
    async execute({ name, shout }, context) {
      if (name.toLowerCase() === 'nobody') {
        // A ToolError keeps its code and says whether trying again could help.
        throw new ToolError({ code: 'E301', message: 'there is nobody to greet', retryable: false });
      }
      context.log('info', 'greeting someone', { stepId: context.stepId });
      const text = `${greeting}, ${name}!`;
      return { greeting: shout ? text.toUpperCase() : text };
    },
  });

  return definePlugin({
    name: 'stepwise-plugin-hello',
    version: '0.1.0',
    tools: [hello],
    // Plans written in another vocabulary can say `greet`.
    aliases: { greet: 'hello' },
    // Release what the plugin holds (sockets, child processes) when the host closes.
    dispose() {},
  });
}

export default createHelloPlugin();
