import { sha256 } from '@stepwise/core/store';

/**
 * Execution ids as core derives them today (`deriveExecutionId`): `ex_` and 24 hex digits of the
 * SHA-256 of run, step and attempt. A frozen copy, not an import: rows packed by this rule must
 * decode the same way whatever core derives later (a different rule only stops the packing).
 */
export function derivedExecutionId(runId: string, stepId: string, attempt: number): string {
  const source = `${runId}\u0000${stepId}\u0000${attempt}`;
  // A step's start, call and end derive the same id, one after the other: hash it once.
  if (source !== lastSource) {
    lastSource = source;
    lastId = `ex_${sha256(source).slice(0, 24)}`;
  }
  return lastId;
}

let lastSource = '';
let lastId = '';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Bits of the `packing` column: which key was left out, and where it was (its index + 1, 4 bits each). */
const EXECUTION_ID_SHIFT = 0;
const RESULT_STEP_ID_SHIFT = 4;
const RESULT_EXECUTION_ID_SHIFT = 8;
const MAX_INDEX = 14;

/** Sets an own property, also for a key named `__proto__` (an assignment would set the prototype). */
function defineKey(object: Json, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

// Runs for three events of every step: a key loop, not entries arrays.
function without(object: Json, key: string): { rest: Json; index: number } {
  const rest: Json = {};
  let index = -1;
  let position = 0;
  for (const name of Object.keys(object)) {
    if (name === key) index = position;
    else defineKey(rest, name, object[name]);
    position++;
  }
  return { rest, index };
}

function withKeyAt(object: Json, key: string, value: unknown, index: number): Json {
  const entries = Object.entries(object);
  entries.splice(index, 0, [key, value]);
  return Object.fromEntries(entries);
}

/** The execution id could be left out of `object`: it is the one derived from its step and attempt. */
function derivable(runId: string, object: Json, stepId: unknown, attempt: unknown): boolean {
  const executionId = object.executionId;
  if (typeof executionId !== 'string' || typeof stepId !== 'string' || !Number.isSafeInteger(attempt)) return false;
  const index = Object.keys(object).indexOf('executionId');
  return index <= MAX_INDEX && executionId === derivedExecutionId(runId, stepId, attempt as number);
}

/**
 * The payload without what its own row already tells: a step-start's, tool-call's or step-end's
 * execution id when it is the derived one, and a step-end result's step id when it is the event's.
 * These are a third of a no-output step's journal. `packing` (0: nothing left out) says how to put
 * them back, at their place, so reads return the event byte for byte.
 */
export function packPayload(runId: string, type: string, payload: Json): { payload: Json; packing: number } {
  let packing = 0;
  let packed = payload;
  if ((type === 'step-start' || type === 'tool-call') && derivable(runId, packed, packed.stepId, packed.attempt)) {
    const { rest, index } = without(packed, 'executionId');
    packed = rest;
    packing |= (index + 1) << EXECUTION_ID_SHIFT;
  } else if (type === 'step-end' && isObject(packed.result) && typeof packed.stepId === 'string') {
    let result = packed.result;
    if (derivable(runId, result, packed.stepId, result.attempt)) {
      const { rest, index } = without(result, 'executionId');
      result = rest;
      packing |= (index + 1) << RESULT_EXECUTION_ID_SHIFT;
    }
    const stepIndex = Object.keys(result).indexOf('stepId');
    if (result.stepId === packed.stepId && stepIndex <= MAX_INDEX) {
      const { rest, index } = without(result, 'stepId');
      result = rest;
      packing |= (index + 1) << RESULT_STEP_ID_SHIFT;
    }
    if (packing !== 0) packed = { ...packed, result };
  }
  return { payload: packed, packing };
}

const slot = (packing: number, shift: number): number => ((packing >> shift) & 0xf) - 1;

/** Puts back what `packPayload` left out (in the reverse order it was taken). */
export function unpackPayload(runId: string, payload: Json, packing: number): Json {
  if (packing === 0) return payload;
  const executionAt = slot(packing, EXECUTION_ID_SHIFT);
  if (executionAt >= 0) {
    return withKeyAt(
      payload,
      'executionId',
      derivedExecutionId(runId, payload.stepId as string, payload.attempt as number),
      executionAt,
    );
  }
  let result = payload.result as Json;
  const stepAt = slot(packing, RESULT_STEP_ID_SHIFT);
  if (stepAt >= 0) result = withKeyAt(result, 'stepId', payload.stepId, stepAt);
  const resultExecutionAt = slot(packing, RESULT_EXECUTION_ID_SHIFT);
  if (resultExecutionAt >= 0) {
    const executionId = derivedExecutionId(runId, payload.stepId as string, result.attempt as number);
    result = withKeyAt(result, 'executionId', executionId, resultExecutionAt);
  }
  return { ...payload, result };
}
