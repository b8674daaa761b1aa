import type { StandardSchemaV1 } from '@standard-schema/spec';
import { Ajv } from 'ajv';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod3';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { defineTool } from './define-tool.js';
import { ToolRegistry } from './tool-registry.js';

const toolWith = (name: string, input: StandardSchemaV1) =>
  defineTool({ name, description: `${name} tool`, input, effect: 'read', execute: async () => ({}) });

function parametersOf(input: StandardSchemaV1) {
  const [definition] = new ToolRegistry([toolWith('probe', input)]).toFunctionDefinitions();
  return definition?.parameters ?? {};
}

function conversionError(input: StandardSchemaV1): StepwiseError {
  try {
    parametersOf(input);
  } catch (error) {
    if (StepwiseError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected the conversion to fail');
}

const ajv = new Ajv({ strict: false });
const accepts = (parameters: Record<string, unknown>, value: unknown) => {
  const { $schema: _ignored, ...schema } = parameters;
  return ajv.validate(schema, value);
};

describe.each([
  ['zod 4', z.object({ path: z.string(), limit: z.number().int().optional() })],
  ['zod 3', z3.object({ path: z3.string(), limit: z3.number().int().optional() })],
  ['valibot', v.object({ path: v.string(), limit: v.optional(v.pipe(v.number(), v.integer())) })],
] as const)('toFunctionDefinitions with a %s input schema', (_library, input) => {
  it('renders the parameters the tool validates', () => {
    const parameters = parametersOf(input);
    expect(parameters).toMatchObject({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] });
    expect(accepts(parameters, { path: 'a.txt', limit: 3 })).toBe(true);
    expect(accepts(parameters, { limit: 3 })).toBe(false);
    expect(accepts(parameters, { path: 7 })).toBe(false);
  });
});

describe('schemas that cannot be expressed as JSON Schema', () => {
  it('zod 4: a date field is an E602 naming the tool, not an empty object', () => {
    const error = conversionError(z.object({ when: z.date() }));
    expect(error.code).toBe(ErrorCodes.PLUGIN_INVALID);
    expect(error.location).toBe('tools/probe/input');
    expect(error.message).toMatch(/tool "probe".*zod.*Date cannot be represented/);
  });

  it('zod 4: the error names where in the arguments the date is', () => {
    const error = conversionError(z.object({ visits: z.array(z.object({ when: z.date() })) }));
    expect(error.message).toContain('(at /visits/*/when)');
    expect(error.details).toMatchObject({ tool: 'probe', vendor: 'zod', path: '/visits/*/when' });
  });

  it('zod 3: a date field is an E602 naming the tool and the property, not a date-time string the tool refuses', () => {
    const input = z3.object({ name: z3.string(), when: z3.date() });
    const error = conversionError(input);
    expect(error.code).toBe(ErrorCodes.PLUGIN_INVALID);
    expect(error.location).toBe('tools/probe/input');
    expect(error.message).toMatch(/tool "probe".*zod 3.*Date cannot be represented in JSON Schema \(at \/when\)/);
    expect(error.details).toMatchObject({ tool: 'probe', vendor: 'zod 3', path: '/when' });
    // what zod-to-json-schema would have shown the model, refused by the tool itself
    expect(input.safeParse({ name: 'a', when: '2024-01-01T00:00:00Z' }).success).toBe(false);
  });

  it.each([
    ['a bigint', z3.bigint(), 'BigInt'],
    ['a map', z3.map(z3.string(), z3.number()), 'Map'],
    ['a set', z3.set(z3.string()), 'Set'],
    ['a function', z3.function(), 'Function types'],
    ['a symbol', z3.symbol(), 'Symbols'],
    ['undefined', z3.undefined(), 'Undefined'],
    ['void', z3.void(), 'Void'],
    ['a promise', z3.promise(z3.string()), 'Promises'],
    ['NaN', z3.nan(), 'NaN'],
    ['an undefined literal', z3.literal(undefined), 'Literal `undefined`'],
    ['a bigint literal', z3.literal(1n), 'BigInt literals'],
  ])('zod 3: %s is an E602 naming its place in the arguments', (_name, field, refusal) => {
    const error = conversionError(z3.object({ options: z3.object({ value: field }) }));
    expect(error.code).toBe(ErrorCodes.PLUGIN_INVALID);
    expect(error.message).toContain(`${refusal} cannot be represented in JSON Schema (at /options/value)`);
  });

  it.each([
    ['an array item', z3.object({ visits: z3.array(z3.object({ when: z3.date() })) }), '/visits/*/when'],
    ['a tuple member', z3.object({ range: z3.tuple([z3.string(), z3.date()]) }), '/range/1'],
    ['a record value', z3.object({ byName: z3.record(z3.string(), z3.date()) }), '/byName/*'],
    ['a union member', z3.object({ at: z3.union([z3.string(), z3.date()]).optional() }), '/at'],
    ['the input of a transform', z3.object({ at: z3.date().transform((date) => date.getTime()) }), '/at'],
    ['the whole input', z3.date(), '/'],
  ])('zod 3: the path of a date inside %s', (_name, input, path) => {
    expect(conversionError(input).details).toMatchObject({ path });
  });

  it('zod 3: a transform or a pipe shows what the tool accepts, its input', () => {
    const input = z3.object({
      count: z3.string().pipe(z3.coerce.number()),
      size: z3.string().transform((text) => text.length),
    });
    const parameters = parametersOf(input);
    expect(parameters).toMatchObject({ properties: { count: { type: 'string' }, size: { type: 'string' } } });
    expect(accepts(parameters, { count: '3', size: 'abc' })).toBe(true);
    expect(input.safeParse({ count: '3', size: 'abc' }).success).toBe(true);
  });

  it('valibot: a date field is an E602 naming the tool', () => {
    const error = conversionError(v.object({ when: v.date() }));
    expect(error.code).toBe(ErrorCodes.PLUGIN_INVALID);
    expect(error.location).toBe('tools/probe/input');
    expect(error.message).toMatch(/valibot.*"date" schema cannot be converted/);
  });

  it('a Standard Schema from a library without a converter is an E602 naming the library', () => {
    const custom: StandardSchemaV1 = {
      '~standard': { version: 1, vendor: 'handmade', validate: (value) => ({ value }) },
    };
    const error = conversionError(custom);
    expect(error.code).toBe(ErrorCodes.PLUGIN_INVALID);
    expect(error.details).toMatchObject({ tool: 'probe', vendor: 'handmade' });
    expect(error.message).toContain('no JSON Schema converter for "handmade"');
  });

  it('only the named tools are converted', () => {
    const registry = new ToolRegistry([toolWith('good', z.object({ a: z.string() })), toolWith('bad', z.date())]);
    expect(registry.toFunctionDefinitions(['good']).map((definition) => definition.name)).toEqual(['good']);
    expect(() => registry.toFunctionDefinitions()).toThrow(/tool "bad"/);
  });
});
