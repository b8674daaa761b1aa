import { ErrorCodes, SandboxViolation, ToolError } from '../errors.js';

/**
 * Does `name` match one of `patterns` (exact names, or `PREFIX_*`)? Case-insensitive on
 * Windows, where environment names are.
 */
export function matchesEnvironmentName(patterns: readonly string[], name: string): boolean {
  const fold = process.platform === 'win32';
  const subject = fold ? name.toUpperCase() : name;
  return patterns.some((pattern) => {
    const wanted = fold ? pattern.toUpperCase() : pattern;
    return wanted.endsWith('*') ? subject.startsWith(wanted.slice(0, -1)) : subject === wanted;
  });
}

/**
 * The variables of `source` whose names match `patterns`: the one way a child process
 * (a command, an MCP server) inherits from its host. Shell function exports (`() {…`) are
 * never passed on.
 * Shared with @stepwise/tools-node and @stepwise/tools-mcp; not part of the public API.
 * @internal
 */
export function inheritEnvironment(
  patterns: readonly string[],
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || value.startsWith('()')) continue;
    if (matchesEnvironmentName(patterns, name)) environment[name] = value;
  }
  return environment;
}

/**
 * Never accepted from a plan, whatever the host's allowlist (or a prefix in it) says: each
 * makes the next program load or run code, write files, trust certificates or use a proxy
 * chosen by whoever writes the value.
 */
export const PLAN_DENIED_ENVIRONMENT: readonly RegExp[] = [
  /^PATH$/i,
  /^HOME$/i,
  /^XDG_/i,
  /^LD_/i,
  /^DYLD_/i,
  /^NODE_(?!ENV$|NO_WARNINGS$)/i,
  /^GIT_/i,
  /^BASH_ENV$/i,
  /^ENV$/i,
  /^SHELL(OPTS)?$/i,
  /^PS4$/i,
  /^PROMPT_COMMAND$/i,
  /^IFS$/i,
  /^PYTHON/i,
  /^PERL5?(OPT|LIB)$/i,
  /^RUBY(OPT|LIB)$/i,
  /^NPM_CONFIG_/i,
  /^(TMPDIR|TMP|TEMP)$/i,
  /^(HTTPS?|ALL|NO|FTP)_PROXY$/i,
  /^(SSL_CERT_(FILE|DIR)|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE)$/i,
  /^(JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS)$/i,
  /^(GCONV_PATH|MALLOC_|LOCPATH|NLSPATH)/i,
  /^(MAKEFLAGS|MAKEFILES|MFLAGS)$/i,
  /^(CARGO_|RUSTC_WRAPPER|RUSTFLAGS|RUSTDOCFLAGS)/i,
  /^(GOFLAGS|GOPROXY|GOTOOLCHAIN)$/i,
  /^(EDITOR|VISUAL|PAGER|BROWSER|SSH_ASKPASS|SUDO_ASKPASS|LESSOPEN|LESSCLOSE)$/i,
];

/**
 * Checks the variables a plan asks for: each name must be allowed by the host and not be a
 * loader or configuration hook (E402), and no value may hold a NUL byte (E202).
 * Shared with @stepwise/tools-node; not part of the public API.
 * @internal
 */
export function checkRequestedEnvironment(
  requested: Readonly<Record<string, string>>,
  allow: readonly string[],
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(requested)) {
    if (PLAN_DENIED_ENVIRONMENT.some((pattern) => pattern.test(name))) {
      throw new SandboxViolation(
        `the environment variable ${name} cannot be set by a plan: it makes programs load or run other code, or write or connect elsewhere`,
        { location: `env/${name}`, details: { reason: 'environment' } },
      );
    }
    if (!matchesEnvironmentName(allow, name)) {
      throw new ToolError({
        code: ErrorCodes.SANDBOX_VIOLATION,
        message: `the environment variable ${name} is not in the host's env allowlist`,
        location: `env/${name}`,
      });
    }
    if (value.includes('\0')) {
      throw new ToolError({
        code: ErrorCodes.ARGUMENTS_INVALID,
        message: `env ${name} contains a NUL byte`,
        location: `env/${name}`,
      });
    }
    environment[name] = value;
  }
  return environment;
}

/** Names whose values are secrets: scrubbed from captured output even if the host forgot to redact. */
const SECRET_NAME = /secret|token|passw(or)?d|api[_-]?key|apikey|credential|private[_-]?key|auth/i;

/**
 * The values in `environment` whose names look secret (at least 6 characters long).
 * Shared with @stepwise/tools-node and @stepwise/tools-mcp; not part of the public API.
 * @internal
 */
export function secretEnvironmentValues(environment: Readonly<Record<string, string>>): string[] {
  return Object.entries(environment)
    .filter(([name, value]) => SECRET_NAME.test(name) && value.length >= 6)
    .map(([, value]) => value);
}
