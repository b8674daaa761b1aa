import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import type { OptionSpecs } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { findConfigFile, loadConfigFile, pluginTrustCandidates } from '../load-config.js';
import { recordTrust, TRUSTED_PATHS_VARIABLE, type TrustRecord } from '../trust-store.js';
import { type CommandContext, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  config: { type: 'string', short: 'c' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

function describeRecord(record: TrustRecord): string[] {
  const kind = record.kind === 'config' ? 'configuration' : 'plugin';
  const sha = `sha256 ${record.sha256.slice(0, 12)}…`;
  if (record.state === 'unchanged') return [`unchanged  ${record.path} (${kind}, ${sha})`];
  if (record.state === 'new') return [`trusted    ${record.path} (${kind}, new, ${sha})`];
  return [
    `trusted    ${record.path} (${kind}, changed since ${record.trustedAt}: sha256 ${record.trustedSha256?.slice(0, 12)}… → ${record.sha256.slice(0, 12)}…)`,
    ...(record.diff
      ? record.diff
          .trimEnd()
          .split('\n')
          .map((line) => `    ${line}`)
      : []),
  ];
}

/** Package plugins are Node modules in node_modules, not hashed (see the README's "Trusted configuration"). */
function packagePlugins(plugins: readonly unknown[] | undefined): string[] {
  return (plugins ?? []).flatMap((plugin) => {
    const specifier = typeof plugin === 'string' ? plugin : (plugin as { module?: unknown }).module;
    if (typeof specifier !== 'string' || specifier.startsWith('.') || path.isAbsolute(specifier)) return [];
    return [specifier];
  });
}

async function configToTrust(context: CommandContext, given: string | undefined): Promise<string> {
  const file = given ? path.resolve(context.io.cwd, given) : await findConfigFile(context.io.cwd);
  if (file) return file;
  throw new StepwiseError(
    ErrorCodes.INPUT_INVALID,
    `no stepwise.config.* in ${context.io.cwd} or above: nothing to trust (name the file: stepwise trust path/to/stepwise.config.json)`,
    { location: context.io.cwd },
  );
}

export const trustCommand: CommandDefinition = {
  name: 'trust',
  summary: 'trust the configuration and the local plugin files it names (records their SHA-256)',
  positionals: { min: 0, max: 1, names: '[config-file]' },
  options,
  help: `Usage: stepwise trust [config-file] [--json]

Every command refuses (exit 2) to load a configuration file, or a local plugin file it names, whose
SHA-256 is not recorded in the trust store: a file changed behind your back (by a plan's command, a
pull, anyone) could run code on this machine. Read the file and what changed, then trust it here.

Records the SHA-256 of the configuration (default: stepwise.config.* here or above) and of every
local plugin file it names ("./tools/plugin.mjs"). Packages from node_modules are not hashed. A
JS/TS configuration is evaluated to find its plugins. The trust store is
$XDG_CONFIG_HOME/stepwise/trusted.json (default ~/.config/stepwise/trusted.json), outside any workspace.

In CI, run "stepwise trust" right after the checkout; or list directories whose files need no
record in ${TRUSTED_PATHS_VARIABLE} (separated like PATH), only where nothing can change them
between the checkout and stepwise.

Options:
  -c, --config F  the configuration file (same as the positional argument)
      --json      print { store, files: [{ path, kind, state, sha256, … }] }

Examples:
  stepwise trust
  stepwise trust ci/stepwise.config.json`,
  async run(context, { values, positionals }) {
    const file = await configToTrust(context, positionals[0] ?? (values.config as string | undefined));
    const config = await loadConfigFile(file);
    const { store, records } = await recordTrust(
      [{ path: file, kind: 'config' }, ...pluginTrustCandidates(config, file)],
      { env: context.io.env, cwd: context.io.cwd },
    );
    if (values.json === true) {
      print(context, JSON.stringify({ store, files: records }));
      return ExitCodes.COMPLETED;
    }
    for (const record of records) for (const line of describeRecord(record)) print(context, line);
    const packages = packagePlugins(config.plugins);
    if (packages.length > 0) print(context, `not hashed (packages): ${packages.join(', ')}`);
    print(context, `trust store: ${store}`);
    return ExitCodes.COMPLETED;
  },
};
