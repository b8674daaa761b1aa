import { ARGS_NESTING_DEPTH, deeper, MAX_NESTING_DEPTH } from './nesting-depth.js';
import { type Plan, StepSchema } from './plan-schema.js';

/**
 * The schema check without the copy, for plans made of plain data (what JSON and object literals
 * give). `PlanSchema.safeParse` builds a new plan and a trail of bookkeeping for every value: for
 * 100,000 steps that is hundreds of megabytes allocated and a second plan held while validation
 * runs, most of it garbage that outlives young-generation collection and raises the peak RSS.
 *
 * True only when the schema accepts `input` and its output would be a plain copy of it; then the
 * input is used as the plan. Anything this check does not recognise (an unknown key, a non-plain
 * object, a value set to `undefined`, an own `__proto__` key) returns false, and the caller runs
 * the schema, which also words the problems. A property test holds it to that.
 *
 * True also means that nothing outside the steps' `args` nests too deep (`deeperOutsideArgs` would
 * say false): the fields that may hold nested values are measured as they are checked, so
 * validation spares a walk over every step of a plain plan for its depth. Only bounded walks run
 * here, so any value, however deep, may be given.
 */
export function isPlainValidPlan(input: unknown): input is Plan {
  if (!isPlainObject(input)) return false;
  for (const key in input) {
    const value = input[key];
    if (value === undefined || !planField(key, value)) return false;
  }
  return typeof input.id === 'string' && Array.isArray(input.steps);
}

const STEP_ID = /^[A-Za-z0-9_.:-]+$/;
const DIGEST = /^[0-9a-f]{64}$/;

function planField(key: string, value: unknown): boolean {
  switch (key) {
    case 'id':
      return typeof value === 'string' && value.length >= 1 && value.length <= 200;
    case '$schema':
    case 'goal':
    case 'intent':
      return typeof value === 'string';
    case 'version':
    case 'revision':
      return Number.isSafeInteger(value) && (value as number) >= 1;
    case 'parentDigest':
      return typeof value === 'string' && DIGEST.test(value);
    case 'metadata':
      return isPlainRecord(value) && !deeper(value, MAX_NESTING_DEPTH - 1);
    case 'steps':
      return isPlainArray(value) && value.length >= 1 && value.every(isPlainValidStep);
    default:
      return false;
  }
}

function isPlainValidStep(step: unknown): boolean {
  if (!isPlainObject(step)) return false;
  for (const key in step) {
    const value = step[key];
    if (value === undefined || !stepField(key, value)) return false;
  }
  return typeof step.id === 'string';
}

function stepField(key: string, value: unknown): boolean {
  switch (key) {
    case 'id':
      return typeof value === 'string' && value.length >= 1 && value.length <= 200 && STEP_ID.test(value);
    case 'tool':
      return typeof value === 'string' && value.length >= 1;
    case 'description':
      return typeof value === 'string';
    case 'requiresApproval':
    case 'critical':
      return typeof value === 'boolean';
    case 'timeoutMs':
    case 'maxTurns':
      return Number.isSafeInteger(value) && (value as number) > 0;
    case 'args':
      // Measured while validation walks its references.
      return isPlainRecord(value);
    case 'metadata':
      return isPlainRecord(value) && !deeper(value, ARGS_NESTING_DEPTH);
    case 'dependsOn':
    case 'tools':
      return isPlainArray(value) && value.every((item) => typeof item === 'string');
    case 'retry':
      return isPlainRecord(value) && StepSchema.shape.retry.safeParse(value).success;
    case 'preconditions':
    case 'expect':
      return (
        isPlainArray(value) &&
        value.every(isPlainRecord) &&
        !deeper(value, ARGS_NESTING_DEPTH) &&
        StepSchema.shape[key].safeParse(value).success
      );
    default:
      return false;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && Object.getOwnPropertySymbols(value).length === 0;
}

/** A plain object the schema copies key for key (an own `__proto__` key would not survive the copy). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && !Object.hasOwn(value, '__proto__');
}

/** A real array without holes (the schema reads a hole as `undefined`). */
function isPlainArray(value: unknown): value is unknown[] {
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return false;
  for (let index = 0; index < value.length; index++) if (!(index in value)) return false;
  return true;
}
