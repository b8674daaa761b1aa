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
const RESULT_OUTPUT_SHIFT = 12;
/** 4 bits: how many seqs before a step-end its tool-result is, when the step-end leaves its output out. */
const OUTPUT_DISTANCE_SHIFT = 16;
const MAX_INDEX = 14;
/** The farthest tool-result a step-end may take its output from (what 4 bits hold). */
export const MAX_OUTPUT_DISTANCE = 15;

/** Sets an own property, also for a key named `__proto__` (an assignment would set the prototype). */
function defineKey(object: Json, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

/** The columns of an event's row: never in its payload. */
const isColumn = (key: string): boolean => key === 'type' || key === 'runId' || key === 'seq' || key === 'at';

/**
 * `object`'s keys but `skip` (and the event columns when `columns`), in order, copied once: the
 * position `skip` had among the copied keys is `skippedAt` afterwards (-1: absent). Runs for
 * three events of every step, so it is one key loop, not entries arrays or rest copies.
 */
function copyWithout(object: Json, skip: string, columns: boolean): Json {
  const rest: Json = {};
  let position = 0;
  skippedAt = -1;
  for (const name of Object.keys(object)) {
    if (columns && isColumn(name)) continue;
    if (name === skip) skippedAt = position;
    else defineKey(rest, name, object[name]);
    position++;
  }
  return rest;
}

let skippedAt = -1;

/** Where `key` is among `object`'s keys (the event columns left out when `columns`); -1 when absent. */
function keyIndex(object: Json, key: string, columns: boolean): number {
  let position = 0;
  for (const name of Object.keys(object)) {
    if (columns && isColumn(name)) continue;
    if (name === key) return position;
    position++;
  }
  return -1;
}

function withKeyAt(object: Json, key: string, value: unknown, index: number): Json {
  const entries = Object.entries(object);
  entries.splice(index, 0, [key, value]);
  return Object.fromEntries(entries);
}

/** The execution id could be left out of `object`: it is the one derived from its step and attempt. */
function derivable(runId: string, object: Json, stepId: unknown, attempt: unknown, columns: boolean): boolean {
  const executionId = object.executionId;
  if (typeof executionId !== 'string' || typeof stepId !== 'string' || !Number.isSafeInteger(attempt)) return false;
  return (
    keyIndex(object, 'executionId', columns) <= MAX_INDEX &&
    executionId === derivedExecutionId(runId, stepId, attempt as number)
  );
}

/**
 * A step-end's result without its derivable execution id, its step id when it is the event's, and
 * its output when it is the output of the tool-result `outputDistance` seqs before (0: not).
 */
function packResult(
  runId: string,
  stepId: string,
  result: Json,
  outputDistance: number,
): { result: Json; packing: number } {
  let packing = 0;
  let packed = result;
  if (derivable(runId, packed, stepId, packed.attempt, false)) {
    packed = copyWithout(packed, 'executionId', false);
    packing |= (skippedAt + 1) << RESULT_EXECUTION_ID_SHIFT;
  }
  if (packed.stepId === stepId && keyIndex(packed, 'stepId', false) <= MAX_INDEX) {
    packed = copyWithout(packed, 'stepId', false);
    packing |= (skippedAt + 1) << RESULT_STEP_ID_SHIFT;
  }
  if (outputDistance > 0 && outputDistance <= MAX_OUTPUT_DISTANCE && keyIndex(packed, 'output', false) <= MAX_INDEX) {
    packed = copyWithout(packed, 'output', false);
    packing |= ((skippedAt + 1) << RESULT_OUTPUT_SHIFT) | (outputDistance << OUTPUT_DISTANCE_SHIFT);
  }
  return { result: packed, packing };
}

/**
 * The event's payload: the event without its columns (type, runId, seq, at) and without what its
 * own row already tells: a step-start's, tool-call's or step-end's execution id when it is the
 * derived one, and a step-end result's step id when it is the event's. These are a third of a
 * no-output step's journal. `packing` (0: nothing left out) says how to put them back, at their
 * place, so reads return the event byte for byte. The event is copied once. A step-end's output
 * is left out too when the caller found it equal to its tool-result's, `outputDistance` seqs before:
 * an output is then journaled once.
 */
export function packPayload(runId: string, event: Json, outputDistance = 0): { payload: Json; packing: number } {
  const type = event.type;
  if ((type === 'step-start' || type === 'tool-call') && derivable(runId, event, event.stepId, event.attempt, true)) {
    const payload = copyWithout(event, 'executionId', true);
    return { payload, packing: (skippedAt + 1) << EXECUTION_ID_SHIFT };
  }
  const payload = copyWithout(event, '', true);
  if (type === 'step-end' && isObject(payload.result) && typeof payload.stepId === 'string') {
    const { result, packing } = packResult(runId, payload.stepId, payload.result, outputDistance);
    if (packing !== 0) payload.result = result;
    return { payload, packing };
  }
  return { payload, packing: 0 };
}

const slot = (packing: number, shift: number): number => ((packing >> shift) & 0xf) - 1;

/** How many seqs before a step-end the tool-result holding its output is; 0 when it holds its own. */
export const outputDistanceOf = (packing: number): number => (packing >> OUTPUT_DISTANCE_SHIFT) & 0xf;

/**
 * Puts back what `packPayload` left out (in the reverse order it was taken). `outputBefore(distance)`
 * is the output of the event `distance` seqs before (a step-end's tool-result).
 */
export function unpackPayload(
  runId: string,
  payload: Json,
  packing: number,
  outputBefore: (distance: number) => unknown,
): Json {
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
  const outputAt = slot(packing, RESULT_OUTPUT_SHIFT);
  if (outputAt >= 0) result = withKeyAt(result, 'output', outputBefore(outputDistanceOf(packing)), outputAt);
  const stepAt = slot(packing, RESULT_STEP_ID_SHIFT);
  if (stepAt >= 0) result = withKeyAt(result, 'stepId', payload.stepId, stepAt);
  const resultExecutionAt = slot(packing, RESULT_EXECUTION_ID_SHIFT);
  if (resultExecutionAt >= 0) {
    const executionId = derivedExecutionId(runId, payload.stepId as string, result.attempt as number);
    result = withKeyAt(result, 'executionId', executionId, resultExecutionAt);
  }
  return { ...payload, result };
}
