import { ErrorCodes, StepwiseError } from '@stepwise/core';

/**
 * The optional Stepwise packages the cli loads on demand: engines other than the default dag
 * engine, the code agent (`solve`, `plan`), the MCP plugin and the Postgres store. They are
 * optional peer dependencies of `@stepwise/cli`, so a host installs only the ones its
 * configuration names.
 */
export type OptionalPackage =
  | '@stepwise/engine-sequential'
  | '@stepwise/engine-agentic'
  | '@stepwise/code-agent'
  | '@stepwise/tools-mcp'
  | '@stepwise/store-postgres';

/** True when `error` says that `name` itself (not something it imports) cannot be found. */
function isMissing(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  const message = String((error as Error).message);
  // Node names the missing package as 'name' (ESM) or "name" / 'name' (CommonJS).
  return message.includes(`'${name}'`) || message.includes(`"${name}"`);
}

/**
 * Runs `load` (an `import()` of `name`, written at the call site so bundlers keep the specifier)
 * and turns "that package is not installed" into a configuration error naming it: E601 with
 * `details.package` and the `npm install` line. Other failures, including a package that is
 * installed but misses one of its own dependencies, are thrown as they are.
 */
export async function importOptionalPackage<Module>(
  name: OptionalPackage,
  purpose: string,
  location: string,
  load: () => Promise<Module>,
): Promise<Module> {
  try {
    return await load();
  } catch (error) {
    if (!isMissing(error, name)) throw error;
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `${purpose} needs ${name}, which is not installed: npm install ${name}`,
      { location, details: { package: name }, cause: error },
    );
  }
}
