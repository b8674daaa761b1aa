import type { StandardSchemaV1 } from '@standard-schema/spec';
import { Ajv } from 'ajv';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod3';
import { defineTool } from './define-tool.js';
import { ErrorCodes, StepwiseError } from './errors.js';
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
