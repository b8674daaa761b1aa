import type { FunctionDefinition, Step, ToolRegistry } from '@stepwise/core';
import { builtInToolDefinitions, isBuiltInTool } from './built-in-tools.js';
import { toolDefinitionTokens } from './context-window.js';
import type { TokenEstimator } from './token-estimator.js';

/** The tools a goal step offers the model. */
export interface StepToolset {
  readonly definitions: readonly FunctionDefinition[];
  /** Names the model may call: the definitions' and the step's own spelling (aliases). */
  readonly allowed: ReadonlySet<string>;
  /** Tokens the definitions take in every request. */
  readonly tokens: number;
}

/** The step's list (aliases and canonical names), or every registered tool; then the two built-ins. */
export function stepToolset(registry: ToolRegistry, step: Step, estimator: TokenEstimator): StepToolset {
  const listed = step.tools?.filter((name) => !isBuiltInTool(name));
  const definitions: FunctionDefinition[] = [
    ...registry.toFunctionDefinitions(listed).filter((definition) => !isBuiltInTool(definition.name)),
    ...builtInToolDefinitions,
  ];
  const allowed = new Set<string>([...(listed ?? []), ...definitions.map((definition) => definition.name)]);
  return { definitions, allowed, tokens: toolDefinitionTokens(definitions, estimator) };
}
