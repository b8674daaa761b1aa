import type { StepResult } from '../journal/events.js';
import type { RunStore } from '../journal/run-store.js';
import type { RetainOutputs } from '../run/engine-options.js';
import type { DependencyGraph } from './dependency-graph.js';

interface RetainedSlot {
  readonly index: number;
  readonly step: { readonly id: string; readonly tool?: string | undefined };
  result: StepResult | undefined;
}

/** What a step reads: the steps its args reference, and for a goal step its dependencies too. */
function readsOf(graph: DependencyGraph, slot: RetainedSlot): readonly number[] {
  const referenced = graph.references[slot.index] ?? [];
  const dependencies = slot.step.tool === undefined ? (graph.dependencies[slot.index] ?? []) : [];
  if (referenced.length === 0) return dependencies;
  const indexes = referenced.map((stepId) => graph.indexById.get(stepId)).filter((at) => at !== undefined);
  return dependencies.length === 0 ? indexes : [...new Set([...indexes, ...dependencies])];
}

/** The result as the run reports it once its output is released: everything but the output. */
function withoutOutput(result: StepResult): StepResult {
  if (!('output' in result)) return result;
  const { output: _released, ...rest } = result;
  return rest;
}

/** Counts, per step, the steps not yet ended that may read its output; releases an output when that reaches 0. */
export class OutputRetention {
  #readers = new Int32Array(0);

  constructor(
    readonly outputs: Map<string, unknown>,
    readonly mode: RetainOutputs,
  ) {}

  /** Counts again from scratch (a new graph, or a resume that restored ended steps) and releases what nobody reads. */
  recount(graph: DependencyGraph, slots: readonly RetainedSlot[]): void {
    if (this.mode === 'all') return;
    this.#readers = new Int32Array(slots.length);
    for (const slot of slots) {
      if (slot.result) continue;
      for (const at of readsOf(graph, slot)) (this.#readers[at] as number)++;
    }
    for (const slot of slots) if (slot.result && this.#unread(graph, slot.index)) this.#release(slot);
  }

  /** Nobody may read the step's output any more, and it is not one of the run's results. */
  #unread(graph: DependencyGraph, index: number): boolean {
    return this.#readers[index] === 0 && (graph.dependents[index]?.length ?? 0) > 0;
  }

  /** A step ended: it keeps its output only if someone may still read it, and stops counting as a reader. */
  ended(graph: DependencyGraph, slots: readonly RetainedSlot[], slot: RetainedSlot): void {
    if (this.mode === 'all') return;
    if (this.#unread(graph, slot.index)) this.#release(slot);
    for (const at of readsOf(graph, slot)) {
      this.#readers[at] = (this.#readers[at] as number) - 1;
      const source = slots[at];
      if (source?.result && this.#unread(graph, at)) this.#release(source);
    }
  }

  #release(slot: RetainedSlot): void {
    this.outputs.delete(slot.step.id);
    if (slot.result) slot.result = withoutOutput(slot.result);
  }

  /** Steps among `stepIds` that succeeded but whose output was released: they must be read back before use. */
  missing(stepIds: readonly string[], resultOf: (stepId: string) => StepResult | undefined): string[] {
    if (this.mode === 'all') return [];
    return stepIds.filter((stepId) => !this.outputs.has(stepId) && resultOf(stepId)?.status === 'succeeded');
  }
}

/**
 * A released output, read back from the store: the record of the step's tool execution, else (a
 * goal step, whose output is no tool's) the step's last successful `step-end` in the journal.
 */
export async function readBackOutput(store: RunStore, runId: string, result: StepResult): Promise<unknown> {
  const record = await store.getExecution(result.executionId);
  if (record && record.runId === runId && record.stepId === result.stepId && record.status === 'succeeded') {
    return record.output;
  }
  let output: unknown;
  for await (const event of store.read(runId)) {
    if (event.type === 'step-end' && event.stepId === result.stepId && event.result.status === 'succeeded') {
      output = event.result.output;
    }
  }
  return output;
}
