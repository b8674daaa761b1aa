import { existsSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWorkspace, PACKAGE_DIRECTORY, parseJsonLines, runCli } from './helpers.js';

const REPOSITORY = path.resolve(PACKAGE_DIRECTORY, '..', '..');

describe('plugins from the configuration', () => {
  const memoryServer = path.join(
    REPOSITORY,
    'node_modules',
    '@modelcontextprotocol',
    'server-memory',
    'dist',
    'index.js',
  );

  it.skipIf(!existsSync(memoryServer))(
    'loads an npm plugin and an MCP server and runs a plan with both',
    async () => {
      const host = await createWorkspace();
      try {
        // Installed as a user would have it: in the project's node_modules.
        await mkdir(path.join(host.directory, 'node_modules'), { recursive: true });
        await symlink(
          path.join(REPOSITORY, 'examples', 'plugin-hello'),
          path.join(host.directory, 'node_modules', 'stepwise-plugin-hello'),
        );
        await host.write('stepwise.config.json', {
          plugins: [
            'stepwise-plugin-hello',
            {
              mcp: {
                command: process.execPath,
                args: [memoryServer],
                env: { MEMORY_FILE_PATH: path.join(host.directory, 'memory.jsonl') },
              },
              prefix: 'memory_',
            },
          ],
        });
        await host.write('plan.json', {
          id: 'plugins',
          steps: [
            { id: 'greet', tool: 'hello', args: { name: 'Ada' } },
            {
              id: 'remember',
              tool: 'memory_create_entities',
              args: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] },
            },
            { id: 'recall', tool: 'memory_search_nodes', args: { query: 'Ada' }, dependsOn: ['remember'] },
          ],
        });
        const validated = await runCli(['validate', 'plan.json'], { cwd: host.directory });
        expect(validated.code, validated.stderr + validated.stdout).toBe(0);
        const outcome = await runCli(['run', 'plan.json', '--json'], { cwd: host.directory, timeoutMs: 60_000 });
        expect(outcome.code, outcome.stderr).toBe(0);
        const ends = parseJsonLines(outcome.stdout).filter((event) => event.type === 'step-end');
        const output = (stepId: string) =>
          JSON.stringify((ends.find((event) => event.stepId === stepId)?.result as { output?: unknown })?.output);
        expect(output('greet')).toContain('Hello, Ada!');
        expect(output('recall')).toContain('wrote the first program');

        const broken = await createWorkspace();
        try {
          await broken.write('stepwise.config.json', { plugins: ['stepwise-plugin-that-does-not-exist'] });
          await broken.write('plan.json', { id: 'p', steps: [{ id: 'a', tool: 'file_read', args: { path: 'x' } }] });
          const missing = await runCli(['run', 'plan.json', '--json'], { cwd: broken.directory });
          expect(missing.code).toBe(2);
          expect(missing.stderr).toContain('E602');
        } finally {
          await broken.dispose();
        }
      } finally {
        await host.dispose();
      }
    },
    90_000,
  );
});
