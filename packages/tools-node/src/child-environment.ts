import { checkRequestedEnvironment, inheritEnvironment, secretEnvironmentValues } from '@stepwise/core/engine';

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

/** Git configuration forced on every git child through GIT_CONFIG_COUNT (command-line scope beats repository config). */
const GIT_HARDENING: readonly (readonly [string, string])[] = [
  ['safe.bareRepository', 'explicit'],
  ['core.fsmonitor', 'false'],
  ['protocol.ext.allow', 'never'],
];

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
  const hostAllow = options.allow ?? [];
  const env = inheritEnvironment([...BASE_ENVIRONMENT, ...hostAllow], options.source);
  Object.assign(env, checkRequestedEnvironment(options.requested ?? {}, hostAllow));
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
  return { env, secrets: secretEnvironmentValues(env) };
}
