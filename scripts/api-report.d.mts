// Types of api-report.mjs for packages/core/test/api-report.test.ts.

export interface ApiName {
  readonly name: string;
  readonly kind: 'class' | 'function' | 'enum' | 'const' | 'interface' | 'type' | 'unknown';
  /** The declaration on one line after its name: type parameters, parameters, heritage, members or type. */
  readonly signature: string;
  /** The declaration's TSDoc has `@internal`: exported for the workspace's packages, not for users. */
  readonly internal: boolean;
}

export interface ApiEntry {
  /** The specifier users import, e.g. `@stepwise/core/engine`. */
  readonly entry: string;
  /** Its source file, relative to packages/core. */
  readonly source: string;
  /** Its report, relative to packages/core. */
  readonly report: string;
  readonly audience: string;
}

export const ENTRIES: readonly ApiEntry[];
export function collectApi(): (ApiEntry & { readonly names: ApiName[] })[];
export function renderReport(entry: ApiEntry & { readonly names: readonly ApiName[] }): string;
export function parseReport(text: string): ApiName[];
export function compareNames(entry: ApiEntry, recorded: readonly ApiName[], current: readonly ApiName[]): string[];
