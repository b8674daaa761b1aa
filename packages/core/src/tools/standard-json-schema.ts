import { createRequire } from 'node:module';
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import { toJSONSchema } from 'zod';
import { ErrorCodes, messageOf, StepwiseError } from '../errors.js';

type JsonSchema = Record<string, unknown>;

// The converters are optional peers: loaded synchronously, on first use, from where core is installed.
declare const __filename: string | undefined;
let requireFromHere: NodeRequire | undefined;
function load(name: string, vendor: string): Record<string, unknown> {
  requireFromHere ??= createRequire(typeof __filename === 'string' ? __filename : import.meta.url);
  try {
    return requireFromHere(name) as Record<string, unknown>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    throw new StepwiseError(
      ErrorCodes.PLUGIN_INVALID,
      `a ${vendor} schema needs "${name}" to be rendered as JSON Schema: npm install ${name}`,
      { details: { vendor, package: name } },
    );
  }
}

function conversionError(vendor: string, error: unknown, path?: string): StepwiseError {
  if (StepwiseError.isInstance(error)) return error;
  const reason = messageOf(error);
  return new StepwiseError(
    ErrorCodes.PLUGIN_INVALID,
    `the ${vendor} schema cannot be expressed as JSON Schema: ${reason}${path === undefined ? '' : ` (at ${path})`}`,
    {
      details: { vendor, ...(path === undefined ? {} : { path }) },
      cause: error,
    },
  );
}

/**
 * Where in the arguments a JSON Schema path points: `properties/a/items/properties/when` is
 * `/a/*\/when` (`*` for any array item or record value); unions and intersections add nothing.
 */
function argumentPathOf(schemaPath: readonly (string | number)[]): string {
  let pointer = '';
  for (let index = 0; index < schemaPath.length; index++) {
    const segment = String(schemaPath[index]);
    const next = schemaPath[index + 1];
    if (segment === 'properties' && next !== undefined) {
      pointer += `/${String(next).replace(/~/g, '~0').replace(/\//g, '~1')}`;
      index++;
    } else if ((segment === 'items' || segment === 'prefixItems') && /^\d+$/.test(String(next))) {
      pointer += `/${String(next)}`;
      index++;
    } else if (segment === 'items' || segment === 'additionalProperties' || segment === 'additionalItems') {
      pointer += '/*';
    }
  }
  return pointer || '/';
}

/**
 * zod 3 types that JSON cannot carry, or that zod-to-json-schema renders as a value the tool then
 * refuses (a date as a date-time string, a map as an array of pairs): zod 4's `toJSONSchema` refuses
 * the same ones. A promise is refused too because zod 3, unlike zod 4, rejects a plain value for it.
 */
const zod3Unrepresentable: Readonly<Record<string, string>> = {
  ZodDate: 'Date',
  ZodBigInt: 'BigInt',
  ZodMap: 'Map',
  ZodSet: 'Set',
  ZodFunction: 'Function types',
  ZodSymbol: 'Symbols',
  ZodUndefined: 'Undefined',
  ZodVoid: 'Void',
  ZodPromise: 'Promises',
  ZodNaN: 'NaN',
};

function zod3Refusal(definition: { typeName?: string; value?: unknown }): string | undefined {
  const { typeName, value } = definition;
  if (typeName === 'ZodLiteral' && value === undefined) return 'Literal `undefined`';
  if (typeName === 'ZodLiteral' && typeof value === 'bigint') return 'BigInt literals';
  return typeName === undefined ? undefined : zod3Unrepresentable[typeName];
}

interface Zod3Converter {
  zodToJsonSchema(schema: unknown, options: Record<string, unknown>): JsonSchema;
  ignoreOverride: symbol;
}

function zod3ToJsonSchema(schema: unknown): JsonSchema {
  const { zodToJsonSchema, ignoreOverride } = load('zod-to-json-schema', 'zod 3') as unknown as Zod3Converter;
  return zodToJsonSchema(schema, {
    // A pipe accepts what its first schema accepts; the default (allOf of both ends) can accept nothing.
    pipeStrategy: 'input',
    override(definition: { typeName?: string; value?: unknown }, refs: { currentPath: string[] }) {
      const refusal = zod3Refusal(definition);
      if (refusal === undefined) return ignoreOverride;
      const path = argumentPathOf(refs.currentPath);
      throw conversionError('zod 3', new Error(`${refusal} cannot be represented in JSON Schema`), path);
    },
  });
}

/**
 * Where a zod 4 schema that failed to convert holds the part JSON cannot express, asked of its own
 * converter; undefined when that zod version cannot tell (its callback form came in a later minor).
 */
function zod4RefusedPath(standard: StandardJSONSchemaV1['~standard']): string | undefined {
  let found: readonly (string | number)[] | undefined;
  const unrepresentable = ({ path }: { path: (string | number)[] }) => {
    found ??= path;
    return 'any';
  };
  try {
    standard.jsonSchema.input({ target: 'draft-2020-12', libraryOptions: { unrepresentable } });
  } catch {
    return undefined;
  }
  return found === undefined ? undefined : argumentPathOf(found);
}

/**
 * JSON Schema for a Standard Schema, through the library's own converter: the schema's
 * `~standard.jsonSchema` (zod ≥ 4.2, arktype), zod 4's `toJSONSchema`, `zod-to-json-schema` for
 * zod 3 and `@valibot/to-json-schema` for valibot. Throws E602 when the schema (or a part of it,
 * such as a date, a bigint or a map) cannot be expressed, naming where in the arguments when the
 * library can tell, or no converter exists for its library: a model must never be shown
 * parameters the tool would reject.
 */
export function standardToJsonSchema(schema: StandardSchemaV1): JsonSchema {
  const standard = schema['~standard'] as StandardSchemaV1['~standard'] & Partial<StandardJSONSchemaV1['~standard']>;
  const vendor = standard.vendor;
  try {
    if (standard.jsonSchema) return standard.jsonSchema.input({ target: 'draft-2020-12' });
    if (vendor === 'zod' && '_zod' in schema) {
      return toJSONSchema(schema as unknown as Parameters<typeof toJSONSchema>[0], { io: 'input' }) as JsonSchema;
    }
    if (vendor === 'zod') return zod3ToJsonSchema(schema);
    if (vendor === 'valibot') {
      const { toJsonSchema } = load('@valibot/to-json-schema', vendor) as {
        toJsonSchema: (schema: unknown, options: { errorMode: 'throw' }) => JsonSchema;
      };
      return toJsonSchema(schema, { errorMode: 'throw' });
    }
  } catch (error) {
    const path =
      vendor === 'zod' && standard.jsonSchema
        ? zod4RefusedPath(standard as StandardJSONSchemaV1['~standard'])
        : undefined;
    throw conversionError(vendor, error, path);
  }
  throw new StepwiseError(
    ErrorCodes.PLUGIN_INVALID,
    `no JSON Schema converter for "${vendor}" schemas: use a library that implements Standard JSON Schema (zod 4, arktype), zod 3, valibot, or pass a JSON Schema`,
    { details: { vendor } },
  );
}
