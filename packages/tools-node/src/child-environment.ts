import { ErrorCodes, SandboxViolation, ToolError } from '@stepwise/core';

/** Inherited by every command: enough to find programs and format text, nothing secret. */
export const BASE_ENVIRONMENT = [
  'PATH',
  'HOME',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  'TERM',
  'USER',
  'LOGNAME',
  'SYSTEMROOT',
  'SYSTEMDRIVE',
  'WINDIR',
  'PATHEXT',
  'COMSPEC',
] as const;

/**
 * Never accepted from a plan's `env` argument, whatever the allowlist says: each of these
 * makes the next program load or run code chosen by whoever writes the value.
 */
const PLAN_DENIED = [
  /^PATH$/i,
  /^HOME$/i,
  /^XDG_CONFIG_HOME$/i,
  /^LD_/i,
  /^DYLD_/i,
  /^NODE_OPTIONS$/i,
  /^NODE_PATH$/i,
  /^GIT_/i,
  /^BASH_ENV$/i,
  /^ENV$/i,
  /^SHELLOPTS$/i,
  /^PS4$/i,
  /^PROMPT_COMMAND$/i,
  /^IFS$/i,
  /^PYTHON(STARTUP|PATH|HOME|INSPECT)$/i,
  /^PERL5?(OPT|LIB)$/i,
  /^RUBYOPT$/i,
  /^NPM_CONFIG_/i,
  /^(EDITOR|VISUAL|PAGER|BROWSER|SSH_ASKPASS|SUDO_ASKPASS)$/i,
];

/** Names whose values are secrets: scrubbed from captured output even if the host forgot to redact. */
const SECRET_NAME = /secret|token|passw(or)?d|api[_-]?key|apikey|credential|private[_-]?key|auth/i;

/** Git configuration forced on every git child through GIT_CONFIG_COUNT (command-line scope beats repository config). */
const GIT_HARDENING: readonly (readonly [string, string])[] = [
  ['safe.bareRepository', 'explicit'],
  ['core.fsmonitor', 'false'],
  ['protocol.ext.allow', 'never'],
];

function matches(patterns: readonly string[], name: string): boolean {
  const fold = process.platform === 'win32';
  const subject = fold ? name.toUpperCase() : name;
  return patterns.some((pattern) => {
    const wanted = fold ? pattern.toUpperCase() : pattern;
    return wanted.endsWith('*') ? subject.startsWith(wanted.slice(0, -1)) : subject === wanted;
  });
}

export interface ChildEnvironmentOptions {
  /** Host-chosen names (or `PREFIX_*` patterns) inherited from `source` on top of the base set. */
  readonly allow?: readonly string[];
  /** Variables the plan asked for; each name must be in `allow` and not a loader/config hook. */
  readonly requested?: Readonly<Record<string, string>>;
  /** Where inherited values come from. Default `process.env`. */
  readonly source?: NodeJS.ProcessEnv;
  /** The program's rule name (`git` gets hardening configuration). */
  readonly executable?: string;
}

/** The child's environment, and the secret values in it that must not come back in output. */
export function childEnvironment(options: ChildEnvironmentOptions): { env: Record<string, string>; secrets: string[] } {
  const source = options.source ?? process.env;
  const hostAllow = options.allow ?? [];
  const allow = [...BASE_ENVIRONMENT, ...hostAllow];
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && matches(allow, name)) env[name] = value;
  }
  for (const [name, value] of Object.entries(options.requested ?? {})) {
    if (PLAN_DENIED.some((pattern) => pattern.test(name))) {
      throw new SandboxViolation(
        `the environment variable ${name} cannot be set by a plan: it makes programs load or run other code`,
        {
          location: `env/${name}`,
          details: { reason: 'environment' },
        },
      );
    }
    if (!matches(hostAllow, name)) {
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
    env[name] = value;
  }
  // Nothing may wait for a person at a terminal that is not there.
  env.GIT_TERMINAL_PROMPT = '0';
  env.GIT_PAGER = 'cat';
  env.PAGER = 'cat';
  if (options.executable === 'git') {
    env.GIT_CONFIG_COUNT = String(GIT_HARDENING.length);
    GIT_HARDENING.forEach(([key, value], index) => {
      env[`GIT_CONFIG_KEY_${index}`] = key;
      env[`GIT_CONFIG_VALUE_${index}`] = value;
    });
  }
  const secrets = Object.entries(env)
    .filter(([name, value]) => SECRET_NAME.test(name) && value.length >= 6)
    .map(([, value]) => value);
  return { env, secrets };
}
