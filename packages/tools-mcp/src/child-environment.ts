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

function matches(name: string, pattern: string): boolean {
  const upper = process.platform === 'win32' ? name.toUpperCase() : name;
  const wanted = process.platform === 'win32' ? pattern.toUpperCase() : pattern;
  return wanted.endsWith('*') ? upper.startsWith(wanted.slice(0, -1)) : upper === wanted;
}

/**
 * The environment a server child gets: allowlisted variables of `source`, then `explicit`
 * values (which win). Shell function exports (`() {…`) are never passed on.
 */
export function childEnvironment(
  explicit: Readonly<Record<string, string>> = {},
  allow: readonly string[] = [],
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const patterns = [...DEFAULT_ENV_ALLOWLIST, ...allow];
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || value.startsWith('()')) continue;
    if (patterns.some((pattern) => matches(name, pattern))) environment[name] = value;
  }
  return { ...environment, ...explicit };
}
