// A one-tool MCP server over stdio for check-packed-packages.mjs: `greet` answers "hello <who>".
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new Server({ name: 'packed-check', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    {
      name: 'greet',
      description: 'Greets someone.',
      inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
      annotations: { readOnlyHint: true },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, (request) => ({
  content: [{ type: 'text', text: `hello ${request.params.arguments.who}` }],
}));
await server.connect(new StdioServerTransport());
