import type { OsSandboxOptions } from '@stepwise/core/engine';
import { parseHostPattern } from './host-allow-list.js';
import { checkStrings, type Fail, isRecord, pointer } from './option-checks.js';

/**
 * `required`: the server runs inside the OS sandbox (bubblewrap) or not at all (E402, naming what
 * to install). `available`: inside it where it can start, else unsandboxed with a warning. `off`:
 * unsandboxed. The same modes as `@stepwise/tools-node`'s commands.
 */
export type McpSandboxMode = 'required' | 'available' | 'off';

/**
 * What the OS sandbox lets a stdio server see and reach: the same rules as a sandboxed command
 * (everything read-only, the home directories, /tmp, /run and credential files hidden, a private
 * HOME and /tmp, its own pid namespace, no capabilities), plus a workspace and an allow list of
 * hosts. Relative paths are relative to the server's `cwd`.
 */
export interface McpSandboxOptions extends OsSandboxOptions {
  /** The directory the server may write (read-write); `cwd` must be inside a visible place. Default: `cwd`. */
  readonly workspace?: string;
  /**
   * Hosts the server may reach through the plugin's egress proxy, the network being otherwise
   * cut: `api.example.com` (ports 80 and 443), `api.example.com:8443`, `*.github.com:443` (any
   * name below github.com), `host:*` (any port), `203.0.113.7:443`, `[2001:db8::1]:443`. The
   * server gets `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` pointing at it. A listed name other than
   * `localhost` only reaches public addresses; `localhost` only loopback ones; an IP only itself.
   * Not with `network: true`.
   */
  readonly allowHosts?: readonly string[];
}

export const SANDBOX_MODES: readonly McpSandboxMode[] = ['required', 'available', 'off'];
const PATH_LISTS = ['writablePaths', 'readablePaths', 'hiddenPaths', 'protectedPaths', 'allowHosts'] as const;
const FLAGS = ['network', 'gitConfig'] as const;
const KEYS: readonly string[] = ['workspace', ...PATH_LISTS, ...FLAGS];

/** Checks `sandbox` and `sandboxOptions` of a stdio server's options (E601 through `fail`). */
export function checkSandboxOptions(mode: unknown, value: unknown, fail: Fail): void {
  if (mode !== undefined && !SANDBOX_MODES.includes(mode as McpSandboxMode)) {
    fail('/sandbox', `expected one of ${SANDBOX_MODES.map((name) => `"${name}"`).join(', ')}`);
  }
  if (value === undefined) return;
  if (!isRecord(value)) fail('/sandboxOptions', 'expected an object');
  for (const key of Object.keys(value)) {
    if (!KEYS.includes(key)) fail(`/sandboxOptions/${pointer(key)}`, `unknown sandbox option "${key}"`);
  }
  if (value.workspace !== undefined && (typeof value.workspace !== 'string' || value.workspace === '')) {
    fail('/sandboxOptions/workspace', 'expected a non-empty string');
  }
  for (const key of PATH_LISTS) checkStrings(value[key], `/sandboxOptions/${key}`, fail);
  for (const key of FLAGS) {
    if (value[key] !== undefined && typeof value[key] !== 'boolean')
      fail(`/sandboxOptions/${key}`, 'expected true or false');
  }
  const hosts = (value.allowHosts ?? []) as readonly string[];
  hosts.forEach((entry, index) => {
    const parsed = parseHostPattern(entry);
    if (typeof parsed === 'string') fail(`/sandboxOptions/allowHosts/${index}`, `${JSON.stringify(entry)}: ${parsed}`);
  });
  if (value.network === true && hosts.length > 0) {
    fail('/sandboxOptions/allowHosts', 'give either "network": true (the whole network) or "allowHosts", not both');
  }
}
