import { createRequire } from 'node:module';

declare const __filename: string | undefined;
let requireFromHere: NodeRequire | undefined;

/**
 * `require(name)` resolved from where core is installed, the `require` made on first use: for the
 * CommonJS packages core loads only when a feature needs them (an optional peer, or ajv for a JSON
 * Schema), synchronously. A CommonJS package gives an ES-module importer the same module object.
 */
export function requireFromCore(name: string): unknown {
  requireFromHere ??= createRequire(typeof __filename === 'string' ? __filename : import.meta.url);
  return requireFromHere(name);
}
