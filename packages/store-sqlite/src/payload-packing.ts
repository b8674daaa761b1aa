import { sha256 } from '@stepwise/core/store';
import { chainBytes } from './chain-column.js';
import { decodeTime, exactMilliseconds } from './time-codec.js';

/**
 * Execution ids as core derives them today (`deriveExecutionId`): `ex_` and 24 hex digits of the
 * SHA-256 of run, step and attempt. A frozen copy, not an import: rows packed by this rule must
 * decode the same way whatever core derives later (a different rule only stops the packing).
 */
export function derivedExecutionId(runId: string, stepId: string, attempt: number): string {
  // A step's start, call, result and end derive the same id, one after the other: hash it once,
  // and compare the parts rather than building the hashed text again for each.
  if (stepId !== lastStepId || attempt !== lastAttempt || runId !== lastRunId) {
    lastId = `ex_${sha256(`${runId}\u0000${stepId}\u0000${attempt}`).slice(0, 24)}`;
    lastRunId = runId;
    lastStepId = stepId;
    lastAttempt = attempt;
  }
  return lastId;
}

let lastRunId = '';
let lastStepId = '';
let lastAttempt = Number.NaN;
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
/**
 * 8 bits (schema version 8): the attempt a left-out execution id derives from, for an event that
 * does not hold its attempt (a tool-result); 0 when the event's own `attempt` is the one.
 */
const ATTEMPT_SHIFT = 20;
const MAX_ATTEMPT = 255;
/** The event's `startedAt` holds how many milliseconds before its `at` it was, not the ISO text (version 8). */
const STARTED_AT_DELTA = 1 << 28;
/** The same for a step-end's `result.startedAt`. */
const RESULT_STARTED_AT_DELTA = 1 << 29;
/** The bits `packResult` sets. */
const RESULT_PACKING = 0xffff0 | RESULT_STARTED_AT_DELTA;
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
 * The keys of `object` named `names` (its own, in order) but `skip`, `also` and `last` (each a key
 * or `undefined`; a key named '' is a key like any other), and, when `columns`, the event columns,
 * copied once. Runs for every event: one key loop over keys read once, not entries arrays or rest copies.
 */
function copyWithout(
  object: Json,
  names: readonly string[],
  columns: boolean,
  skip?: string,
  also?: string,
  last?: string,
): Json {
  const rest: Json = {};
  for (const name of names) {
    if ((columns && isColumn(name)) || name === skip || name === also || name === last) continue;
    defineKey(rest, name, object[name]);
  }
  return rest;
}

/** Where `key` is among `names` (the event columns left out when `columns`); -1 when absent. */
function keyIndex(names: readonly string[], key: string, columns: boolean): number {
  let position = 0;
  for (const name of names) {
    if (columns && isColumn(name)) continue;
    if (name === key) return position;
    position++;
  }
  return -1;
}

/** A copy of `object` with `key` inserted at `index` among its keys (at the end when it has fewer). */
function withKeyAt(object: Json, key: string, value: unknown, index: number): Json {
  const copy: Json = {};
  let position = 0;
  for (const name of Object.keys(object)) {
    if (position++ === index) defineKey(copy, key, value);
    defineKey(copy, name, object[name]);
  }
  if (position <= index) defineKey(copy, key, value);
  return copy;
}

/**
 * The execution id could be left out of `object`, where it is at `index` (see `keyIndex`): it is
 * the one derived from its step and attempt.
 */
function derivable(runId: string, object: Json, index: number, stepId: unknown, attempt: unknown): boolean {
  const executionId = object.executionId;
  if (typeof executionId !== 'string' || typeof stepId !== 'string' || !Number.isSafeInteger(attempt)) return false;
  return index <= MAX_INDEX && executionId === derivedExecutionId(runId, stepId, attempt as number);
}

/**
 * `startedAt` as the milliseconds from it to the event's `at` (`atMs`), when both are times stored
 * exactly as milliseconds: 1–3 characters instead of 26. `undefined` when it is not such a time.
 */
function startedAtDelta(startedAt: unknown, atMs: number | undefined): number | undefined {
  if (atMs === undefined || typeof startedAt !== 'string') return undefined;
  const started = exactMilliseconds(startedAt);
  return started === undefined ? undefined : atMs - started;
}

/** Where a left-out key was among the keys left when it was taken out, as `packing` holds it (index + 1). */
const slotBits = (index: number, shift: number): number => (index + 1) << shift;

/**
 * A step-end's result without its derivable execution id, its step id when it is the event's, its
 * output when it is the output of the tool-result `outputDistance` seqs before (0: not), and its
 * start time as a delta from the event's (see `startedAtDelta`). The keys are taken out in that
 * order, each at its place among the keys the one before left (what `unpackResult` reverses), in
 * one copy.
 */
function packResult(
  runId: string,
  stepId: string,
  result: Json,
  outputDistance: number,
  atMs: number | undefined,
): { result: Json; packing: number } {
  const names = Object.keys(result);
  let packing = 0;
  const executionAt = names.indexOf('executionId');
  const withoutExecution = derivable(runId, result, executionAt, stepId, result.attempt);
  if (withoutExecution) packing |= slotBits(executionAt, RESULT_EXECUTION_ID_SHIFT);
  const before = (at: number, taken: boolean, index: number): number => (taken && at < index ? 1 : 0);
  const stepAt = names.indexOf('stepId');
  const stepPosition = stepAt - before(executionAt, withoutExecution, stepAt);
  const withoutStep = result.stepId === stepId && stepPosition <= MAX_INDEX;
  if (withoutStep) packing |= slotBits(stepPosition, RESULT_STEP_ID_SHIFT);
  const outputAt = names.indexOf('output');
  const outputPosition =
    outputAt < 0
      ? -1
      : outputAt - before(executionAt, withoutExecution, outputAt) - before(stepAt, withoutStep, outputAt);
  const withoutOutput = outputDistance > 0 && outputDistance <= MAX_OUTPUT_DISTANCE && outputPosition <= MAX_INDEX;
  if (withoutOutput)
    packing |= slotBits(outputPosition, RESULT_OUTPUT_SHIFT) | (outputDistance << OUTPUT_DISTANCE_SHIFT);
  const delta = startedAtDelta(result.startedAt, atMs);
  if (packing === 0 && delta === undefined) return { result, packing };
  const packed = copyWithout(
    result,
    names,
    false,
    withoutExecution ? 'executionId' : undefined,
    withoutStep ? 'stepId' : undefined,
    withoutOutput ? 'output' : undefined,
  );
  if (delta !== undefined) {
    packed.startedAt = delta;
    packing |= RESULT_STARTED_AT_DELTA;
  }
  return { result: packed, packing };
}

/** An event's payload, what `packing` says was left out of it, and its chain value's bytes (or `null`). */
export interface PackedPayload {
  readonly payload: Json;
  readonly packing: number;
  readonly chain: Buffer | null;
}

/**
 * Which key `packPayload` leaves out of the top level: a step-start's or tool-call's execution id
 * derived from its own attempt, a tool-result's derived from `attempt` (the writer knows it from
 * the call). The execution id is at `index` among the payload's keys. What `packing` must then say
 * about the attempt; `undefined` when the id stays.
 */
function leftOutExecutionId(
  runId: string,
  event: Json,
  index: number,
  attempt: number | undefined,
): number | undefined {
  const type = event.type;
  if (type === 'step-start' || type === 'tool-call') {
    return derivable(runId, event, index, event.stepId, event.attempt) ? 0 : undefined;
  }
  if (type !== 'tool-result' || attempt === undefined || attempt < 1 || attempt > MAX_ATTEMPT) return undefined;
  return derivable(runId, event, index, event.stepId, attempt) ? attempt << ATTEMPT_SHIFT : undefined;
}

/**
 * The event's payload: the event without its columns (type, runId, seq, at, and its chain value
 * when it is the last key) and without what its row already tells: an execution id derived from
 * run, step and attempt (a step-start's, tool-call's, tool-result's, step-end result's), a step-end
 * result's step id when it is the event's, and start times as milliseconds before `at`. These are
 * half of a no-output step's journal. `packing` (0: nothing left out) says how to put them back, at
 * their place, so reads return the event byte for byte. The event is copied once. A step-end's
 * output is left out too when the caller found it equal to its tool-result's, `outputDistance`
 * seqs before: an output is then journaled once. `attempt` is the attempt of a tool-result's call.
 * `atMs`: the event's `at` as exact milliseconds (see `exactMilliseconds`), when the caller has it.
 * The chain value leaves the payload when it is the last key and has the form `chainBytes` stores;
 * its bytes are written to `chainInto` when given (a buffer the caller binds and reuses).
 */
export function packPayload(
  runId: string,
  event: Json,
  outputDistance = 0,
  attempt?: number,
  atMs = typeof event.at === 'string' ? exactMilliseconds(event.at) : undefined,
  chainInto?: Buffer,
): PackedPayload {
  const names = Object.keys(event);
  const executionAt = keyIndex(names, 'executionId', true);
  const attemptBits = leftOutExecutionId(runId, event, executionAt, attempt);
  const chain = names[names.length - 1] === 'chain' ? (chainBytes(event.chain, chainInto) ?? null) : null;
  const executionId = attemptBits === undefined ? undefined : 'executionId';
  const payload = copyWithout(event, names, true, executionId, chain === null ? undefined : 'chain');
  let packing = attemptBits === undefined ? 0 : slotBits(executionAt, EXECUTION_ID_SHIFT) | attemptBits;
  const delta = startedAtDelta(payload.startedAt, atMs);
  if (delta !== undefined) {
    payload.startedAt = delta;
    packing |= STARTED_AT_DELTA;
  }
  if (event.type === 'step-end' && isObject(payload.result) && typeof payload.stepId === 'string') {
    const packed = packResult(runId, payload.stepId, payload.result, outputDistance, atMs);
    if (packed.packing !== 0) payload.result = packed.result;
    packing |= packed.packing;
  }
  return { payload, packing, chain };
}

const slot = (packing: number, shift: number): number => ((packing >> shift) & 0xf) - 1;

/** How many seqs before a step-end the tool-result holding its output is; 0 when it holds its own. */
export const outputDistanceOf = (packing: number): number => (packing >> OUTPUT_DISTANCE_SHIFT) & 0xf;

// Mostly the event's own time (a delta of 0): decodeTime's cache then serves the event's `at` too.
const timeBefore = (atMs: number, delta: unknown): string => decodeTime(atMs - (delta as number));

/**
 * Puts back what `packPayload` left out (in the reverse order it was taken). `atMs` is the event's
 * time in milliseconds (the row's `at` when it is an integer); `outputBefore(distance)` is the
 * output of the event `distance` seqs before (a step-end's tool-result).
 */
export function unpackPayload(
  runId: string,
  payload: Json,
  packing: number,
  atMs: number | undefined,
  outputBefore: (distance: number) => unknown,
): Json {
  if (packing === 0) return payload;
  let unpacked = payload;
  if (packing & STARTED_AT_DELTA) unpacked.startedAt = timeBefore(atMs as number, unpacked.startedAt);
  const executionAt = slot(packing, EXECUTION_ID_SHIFT);
  if (executionAt >= 0) {
    const attempt = (packing >> ATTEMPT_SHIFT) & MAX_ATTEMPT || (unpacked.attempt as number);
    const executionId = derivedExecutionId(runId, unpacked.stepId as string, attempt);
    unpacked = withKeyAt(unpacked, 'executionId', executionId, executionAt);
  }
  if (!isObject(unpacked.result) || (packing & RESULT_PACKING) === 0) return unpacked;
  return { ...unpacked, result: unpackResult(runId, unpacked, packing, atMs, outputBefore) };
}

function unpackResult(
  runId: string,
  payload: Json,
  packing: number,
  atMs: number | undefined,
  outputBefore: (distance: number) => unknown,
): Json {
  let result = payload.result as Json;
  if (packing & RESULT_STARTED_AT_DELTA)
    result = { ...result, startedAt: timeBefore(atMs as number, result.startedAt) };
  const outputAt = slot(packing, RESULT_OUTPUT_SHIFT);
  if (outputAt >= 0) result = withKeyAt(result, 'output', outputBefore(outputDistanceOf(packing)), outputAt);
  const stepAt = slot(packing, RESULT_STEP_ID_SHIFT);
  if (stepAt >= 0) result = withKeyAt(result, 'stepId', payload.stepId, stepAt);
  const resultExecutionAt = slot(packing, RESULT_EXECUTION_ID_SHIFT);
  if (resultExecutionAt >= 0) {
    const executionId = derivedExecutionId(runId, payload.stepId as string, result.attempt as number);
    result = withKeyAt(result, 'executionId', executionId, resultExecutionAt);
  }
  return result;
}
