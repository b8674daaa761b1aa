// The engine both processes use: the dag engine with the file tools, a SQLite journal, and every
// write waiting for a person (approval mode `pause`) instead of asking on a terminal.
import path from 'node:path';
import { ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { nodeTools } from '@stepwise/tools-node';

/** Where the journal of a workspace lives. */
export function databaseOf(workspace) {
  return path.join(workspace, '.stepwise', 'stepwise.db');
}

export async function openEngine(workspace) {
  const tools = new ToolRegistry();
  await tools.use(nodeTools({ workspace }));
  const store = createSqliteStore({ path: databaseOf(workspace) });
  const engine = dagEngine({
    tools,
    store,
    workspace,
    approvals: { policy: { effects: { write: 'pause', destructive: 'pause', exec: 'pause' } } },
  });
  return { engine, store };
}
