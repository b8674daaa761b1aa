// The same plan as a LangGraph.js StateGraph: one node per step, `addEdge(START, id)` for roots,
// `addEdge(dependency, id)` for one dependency, `addEdge([dependencies], id)` (a waiting edge: the
// node runs once all of them ran) for several, `addEdge(id, END)` for sinks. State is a single
// counter with a sum reducer, so checkpoints stay small and the comparison is about scheduling.
import { Annotation, END, MemorySaver, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';

const State = Annotation.Root({
  done: Annotation({ reducer: (left, right) => left + right, default: () => 0 }),
});

/** `work(step)` is what each node does (sleep its duration, or nothing). */
export function buildGraph(plan, work, checkpointer) {
  const builder = new StateGraph(State);
  const hasDependents = new Set();
  for (const step of plan.steps) {
    builder.addNode(step.id, async () => {
      await work(step);
      return { done: 1 };
    });
  }
  for (const step of plan.steps) {
    const dependencies = step.dependsOn ?? [];
    if (dependencies.length === 0) builder.addEdge(START, step.id);
    else if (dependencies.length === 1) builder.addEdge(dependencies[0], step.id);
    else builder.addEdge(dependencies, step.id);
    for (const dependency of dependencies) hasDependents.add(dependency);
  }
  for (const step of plan.steps) if (!hasDependents.has(step.id)) builder.addEdge(step.id, END);
  return builder.compile({ checkpointer });
}

export const savers = {
  MemorySaver: () => new MemorySaver(),
  /**
   * better-sqlite3 opens at SQLite's default synchronous=FULL; SqliteSaver switches to WAL. Pass
   * the same `synchronous` the Stepwise store under comparison uses (its default is NORMAL), and
   * the same WAL checkpoint interval (the store's default `checkpointPages`).
   */
  SqliteSaver: (path, synchronous = 'NORMAL') => {
    const saver = SqliteSaver.fromConnString(path);
    saver.db.pragma(`synchronous = ${synchronous}`);
    saver.db.pragma('wal_autocheckpoint = 10000');
    return saver;
  },
};

let threads = 0;
/**
 * Runs the graph to the end; returns the final state. `maxConcurrency` bounds parallel nodes;
 * `durability` is LangGraph's ("sync": each checkpoint is written before the next step; "async",
 * its default: written in the background while the next step runs).
 */
export async function invoke(graph, plan, maxConcurrency, durability) {
  const state = await graph.invoke(
    { done: 0 },
    {
      configurable: { thread_id: `bench_${threads++}` },
      recursionLimit: plan.steps.length + 10,
      ...(maxConcurrency ? { maxConcurrency } : {}),
      ...(durability ? { durability } : {}),
    },
  );
  if (state.done !== plan.steps.length) throw new Error(`LangGraph ran ${state.done} of ${plan.steps.length} nodes`);
  return state;
}
