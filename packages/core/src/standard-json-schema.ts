import { createRequire } from 'node:module';
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import { toJSONSchema } from 'zod';
import { ErrorCodes, StepwiseError } from './errors.js';

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

function conversionError(vendor: string, error: unknown): StepwiseError {
  if (StepwiseError.isInstance(error)) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new StepwiseError(
    ErrorCodes.PLUGIN_INVALID,
    `the ${vendor} schema cannot be expressed as JSON Schema: ${reason}`,
    {
      details: { vendor },
      cause: error,
    },
  );
}

/**
 * JSON Schema for a Standard Schema, through the library's own converter: the schema's
 * `~standard.jsonSchema` (zod ≥ 4.2, arktype), zod 4's `toJSONSchema`, `zod-to-json-schema` for
 * zod 3 and `@valibot/to-json-schema` for valibot. Throws E602 when the schema (or a part of it,
 * such as a date or a transform) cannot be expressed, or no converter exists for its library:
 * a model must never be shown parameters the tool would reject.
 */
export function standardToJsonSchema(schema: StandardSchemaV1): JsonSchema {
  const standard = schema['~standard'] as StandardSchemaV1['~standard'] & Partial<StandardJSONSchemaV1['~standard']>;
  const vendor = standard.vendor;
  try {
    if (standard.jsonSchema) return standard.jsonSchema.input({ target: 'draft-2020-12' });
    if (vendor === 'zod' && '_zod' in schema) {
      return toJSONSchema(schema as unknown as Parameters<typeof toJSONSchema>[0], { io: 'input' }) as JsonSchema;
    }
    if (vendor === 'zod') {
      const { zodToJsonSchema } = load('zod-to-json-schema', 'zod 3') as {
        zodToJsonSchema: (schema: unknown) => JsonSchema;
      };
      return zodToJsonSchema(schema);
    }
    if (vendor === 'valibot') {
      const { toJsonSchema } = load('@valibot/to-json-schema', vendor) as {
        toJsonSchema: (schema: unknown, options: { errorMode: 'throw' }) => JsonSchema;
      };
      return toJsonSchema(schema, { errorMode: 'throw' });
    }
  } catch (error) {
    throw conversionError(vendor, error);
  }
  throw new StepwiseError(
    ErrorCodes.PLUGIN_INVALID,
    `no JSON Schema converter for "${vendor}" schemas: use a library that implements Standard JSON Schema (zod 4, arktype), zod 3, valibot, or pass a JSON Schema`,
    { details: { vendor } },
  );
}
