import type { StandardSchemaV1 } from '@standard-schema/spec';
import { Ajv, type ValidateFunction } from 'ajv';
import { standardToJsonSchema } from './standard-json-schema.js';

/** A JSON Schema object (validated with ajv). */
export type JsonSchema = Record<string, unknown>;

/** Tool input/output schemas: any Standard Schema (zod 4 or 3, valibot, arktype…) or a JSON Schema. */
export type ToolSchema<T = unknown> = StandardSchemaV1<unknown, T> | JsonSchema;

export interface SchemaIssue {
  /** JSON pointer into the validated value ("" for the value itself). */
  readonly path: string;
  readonly message: string;
}

export type SchemaResult<T> = { ok: true; value: T } | { ok: false; issues: SchemaIssue[] };

/** One validation path for every schema flavour, compiled once per schema object. */
export interface CompiledSchema<T = unknown> {
  /** Sync when the schema is sync (zod without async refinements, every JSON Schema). */
  validate(value: unknown): SchemaResult<T> | Promise<SchemaResult<T>>;
  /** JSON Schema for LLM function calling and documentation; E602 when the schema cannot be expressed. */
  toJsonSchema(): JsonSchema;
}

function isStandardSchema(schema: unknown): schema is StandardSchemaV1 {
  return typeof schema === 'object' && schema !== null && '~standard' in schema;
}

function pointerOf(path: StandardSchemaV1.Issue['path']): string {
  if (!path) return '';
  return path
    .map((segment) => {
      const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
      return `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
    })
    .join('');
}

function fromStandard<T>(result: StandardSchemaV1.Result<T>): SchemaResult<T> {
  if (result.issues) {
    return {
      ok: false,
      issues: result.issues.map((issue) => ({
        path: pointerOf(issue.path),
        message: issue.message,
      })),
    };
  }
  return { ok: true, value: result.value };
}

let sharedAjv: Ajv | undefined;
function ajv(): Ajv {
  // strict: false so schemas from MCP servers and other tools with vendor keywords still compile.
  sharedAjv ??= new Ajv({ allErrors: true, strict: false, useDefaults: true });
  return sharedAjv;
}

const cache = new WeakMap<object, CompiledSchema>();

/**
 * Compiles (and caches) a tool schema. Throws when a JSON Schema itself is invalid.
 * Shared with @stepwise/tools-mcp; not part of the public API.
 * @internal
 */
export function compileSchema<T = unknown>(schema: ToolSchema<T>): CompiledSchema<T> {
  const cached = cache.get(schema);
  if (cached) return cached as CompiledSchema<T>;
  let compiled: CompiledSchema<T>;
  if (isStandardSchema(schema)) {
    const standard = schema as StandardSchemaV1<unknown, T>;
    let jsonSchema: JsonSchema | undefined;
    compiled = {
      validate(value) {
        const result = standard['~standard'].validate(value);
        return result instanceof Promise ? result.then(fromStandard) : fromStandard(result);
      },
      toJsonSchema() {
        jsonSchema ??= standardToJsonSchema(standard);
        return jsonSchema;
      },
    };
  } else {
    const validator: ValidateFunction = ajv().compile(schema);
    // ajv applies defaults in place: when the schema has any, validate a copy so the caller's
    // args stay as written. Most schemas have none, and the copy is the costly part.
    const hasDefaults = JSON.stringify(schema).includes('"default"');
    compiled = {
      validate(value) {
        const copy = hasDefaults ? structuredClone(value) : value;
        if (validator(copy)) return { ok: true, value: copy as T };
        return {
          ok: false,
          issues: (validator.errors ?? []).map((error) => ({
            path: error.instancePath,
            message: `${error.message ?? 'invalid'}${error.params && 'missingProperty' in error.params ? ` (${String(error.params.missingProperty)})` : ''}`,
          })),
        };
      },
      toJsonSchema: () => schema,
    };
  }
  cache.set(schema, compiled as CompiledSchema);
  return compiled;
}

export function formatIssues(issues: readonly SchemaIssue[]): string {
  return issues.map((issue) => `${issue.path || '/'}: ${issue.message}`).join('; ');
}
