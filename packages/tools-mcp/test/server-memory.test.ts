import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Plan, type RunStore, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpTools } from '../src/index.js';
import { serverEntry, temporaryDirectory } from './helpers.js';

interface KnowledgeGraph {
  readonly entities: readonly { name: string; entityType: string; observations: string[] }[];
  readonly relations: readonly { from: string; to: string; relationType: string }[];
}

// @modelcontextprotocol/server-memory, pinned in package.json: a knowledge graph in a JSONL file.
describe('server-memory through the dag engine into SQLite', () => {
  let directory: { path: string; remove: () => Promise<void> };
  let registry: ToolRegistry;
  let store: RunStore;
  let memoryFile: string;

  beforeAll(async () => {
    directory = await temporaryDirectory();
    memoryFile = join(directory.path, 'memory.jsonl');
    const plugin = await mcpTools({
      command: process.execPath,
      args: [serverEntry('memory')],
      env: { MEMORY_FILE_PATH: memoryFile },
      sandboxOptions: { workspace: directory.path },
    });
    registry = new ToolRegistry();
    await registry.use(plugin);
    store = createSqliteStore({ path: join(directory.path, 'runs.db') });
  });
  afterAll(async () => {
    await registry?.dispose();
    await store?.close();
    await directory?.remove();
  });

  it('creates entities and relations, then finds them', async () => {
    const plan: Plan = {
      id: 'plan_memory',
      version: 1,
      goal: 'Remember who programmed what',
      steps: [
        {
          id: 'people',
          tool: 'create_entities',
          args: {
            entities: [
              { name: 'Ada Lovelace', entityType: 'person', observations: ['wrote the first published program'] },
              { name: 'Analytical Engine', entityType: 'machine', observations: ['designed by Babbage'] },
              { name: 'Grace Hopper', entityType: 'person', observations: ['worked on COBOL'] },
            ],
          },
        },
        {
          id: 'links',
          tool: 'create_relations',
          dependsOn: ['people'],
          args: { relations: [{ from: 'Ada Lovelace', to: 'Analytical Engine', relationType: 'programmed' }] },
        },
        { id: 'search', tool: 'search_nodes', dependsOn: ['links'], args: { query: 'program' } },
        {
          id: 'open',
          tool: 'open_nodes',
          dependsOn: ['links'],
          args: { names: ['Ada Lovelace', 'Analytical Engine'] },
        },
      ],
    };
    const result = await dagEngine({ tools: registry, store, retry: { maxAttempts: 1 } }).run(plan).result;
    expect(result.status).toBe('completed');
    const byId = new Map(result.steps.map((step) => [step.stepId, step.output as { structured: KnowledgeGraph }]));

    const found = byId.get('search')?.structured;
    expect(found?.entities.map((entity) => entity.name)).toEqual(['Ada Lovelace']);
    const opened = byId.get('open')?.structured;
    expect(opened?.relations).toEqual([
      expect.objectContaining({ from: 'Ada Lovelace', to: 'Analytical Engine', relationType: 'programmed' }),
    ]);

    expect(existsSync(memoryFile)).toBe(true);
    expect(await readFile(memoryFile, 'utf8')).toContain('"relationType":"programmed"');
    expect(await store.getRun(result.runId)).toMatchObject({ status: 'completed' });
  });
});
