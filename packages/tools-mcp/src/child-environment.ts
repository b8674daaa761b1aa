import { inheritEnvironment } from '@stepwise/core/engine';

/**
 * Variables a server may inherit without being named: what programs need to find executables,
 * the home directory, the locale, temp files and the system's certificates. Nothing that usually
 * carries a credential. (The MCP SDK adds HOME, LOGNAME, PATH, SHELL, TERM and USER itself.)
 */
export const DEFAULT_ENV_ALLOWLIST: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TZ',
  'TMPDIR',
  'TMP',
  'TEMP',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  // Windows needs these to start most programs.
  'SYSTEMROOT',
  'SYSTEMDRIVE',
  'WINDIR',
  'COMSPEC',
  'PATHEXT',
  'APPDATA',
  'LOCALAPPDATA',
  'PROGRAMDATA',
  'PROGRAMFILES',
  'USERPROFILE',
  'HOMEDRIVE',
  'HOMEPATH',
  'USERNAME',
  'PROCESSOR_ARCHITECTURE',
];

/**
 * The environment a server child gets: allowlisted variables of `source`, then `explicit`
 * values (which win). Shell function exports (`() {…`) are never passed on.
 */
export function childEnvironment(
  explicit: Readonly<Record<string, string>> = {},
  allow: readonly string[] = [],
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  return { ...inheritEnvironment([...DEFAULT_ENV_ALLOWLIST, ...allow], source), ...explicit };
}
