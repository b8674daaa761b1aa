import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ErrorCode, ErrorCodes } from '@stepwise/core';

/** What the host allows `run_command` to run. */
export interface CommandPolicy {
  /** Executables that may run: bare names looked up on PATH (`git`, `node`) or exact absolute paths. */
  readonly allow: readonly string[];
  /** Let `npx`, `npm exec`, `pnpm dlx`, `yarn dlx`, `bunx` and `npm init <pkg>` download and run packages. Default false. */
  readonly allowNpx?: boolean;
  /** Let `node -e/--eval/-p/--print`, stdin programs and `bun -e` run inline code. Default false. */
  readonly allowNodeEval?: boolean;
  /**
   * Apply the per-executable argument rules and the path-argument checks. Default true. Only
   * turn this off when the OS sandbox is `required`: the allowlist still applies, and the OS
   * sandbox is then the only boundary.
   */
  readonly checkArguments?: boolean;
}

/** Why a command was refused: E202 (not argv), E303 (executable not allowed) or E402 (dangerous argument). */
export interface CommandRefusal {
  readonly code: ErrorCode;
  readonly message: string;
  /** Index in argv of the offending element. */
  readonly index: number;
}

/** Run other programs given as arguments, so allowlisting them would allow everything. */
const WRAPPERS = new Set([
  'env',
  'sudo',
  'doas',
  'su',
  'xargs',
  'nohup',
  'nice',
  'ionice',
  'timeout',
  'stdbuf',
  'time',
  'watch',
  'chroot',
  'setsid',
  'strace',
  'ltrace',
  'script',
  'busybox',
  'unshare',
  'nsenter',
  'runuser',
  'flock',
  'parallel',
]);

const SHELLS = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'mksh',
  'fish',
  'csh',
  'tcsh',
  'ash',
  'pwsh',
  'powershell',
  'cmd',
]);

/** Git subcommands that may run. Anything else may be an alias (`!sh -c …`) or a dangerous helper. */
const GIT_SUBCOMMANDS = new Set([
  'add',
  'annotate',
  'apply',
  'archive',
  'bisect',
  'blame',
  'branch',
  'cat-file',
  'check-attr',
  'check-ignore',
  'checkout',
  'cherry',
  'cherry-pick',
  'clean',
  'clone',
  'commit',
  'config',
  'count-objects',
  'describe',
  'diff',
  'diff-files',
  'diff-index',
  'diff-tree',
  'fetch',
  'for-each-ref',
  'format-patch',
  'fsck',
  'gc',
  'grep',
  'help',
  'init',
  'log',
  'ls-files',
  'ls-remote',
  'ls-tree',
  'merge',
  'merge-base',
  'mv',
  'name-rev',
  'notes',
  'pull',
  'push',
  'range-diff',
  'rebase',
  'reflog',
  'remote',
  'reset',
  'restore',
  'rev-list',
  'rev-parse',
  'revert',
  'rm',
  'shortlog',
  'show',
  'show-branch',
  'show-ref',
  'stash',
  'status',
  'submodule',
  'switch',
  'symbolic-ref',
  'tag',
  'version',
  'whatchanged',
  'worktree',
]);

/** Git global options that take a separate value. */
const GIT_GLOBAL_VALUES = new Set([
  '-C',
  '-c',
  '--git-dir',
  '--work-tree',
  '--namespace',
  '--config-env',
  '--super-prefix',
]);

/** Node options that take a separate value (so the script is found after them). */
const NODE_OPTION_VALUES = new Set([
  '-r',
  '--require',
  '--import',
  '--loader',
  '--experimental-loader',
  '-C',
  '--conditions',
  '--input-type',
  '--title',
  '--env-file',
  '--env-file-if-exists',
  '--stack-size',
  '--redirect-warnings',
  '--watch-path',
  '--test-reporter',
  '--test-reporter-destination',
  '--test-name-pattern',
  '--disable-warning',
  '--max-old-space-size',
]);

/** The executable's name as rules know it: basename, no `.exe`, no version suffix (`python3.12` → `python`). */
export function executableName(executable: string): string {
  let name = path.basename(executable.replace(/\\/g, '/'));
  name = name.replace(/\.(exe|cmd|bat|com)$/i, '');
  if (process.platform === 'win32') name = name.toLowerCase();
  return name.replace(/^(python|pip)[0-9.]*$/, '$1');
}

function refuse(index: number, message: string, code: ErrorCode = ErrorCodes.SANDBOX_VIOLATION): CommandRefusal {
  return { code, message, index };
}

/** The option name and, for `--name=value`, its value. */
function splitOption(argument: string): { name: string; value?: string } {
  const equals = argument.indexOf('=');
  if (argument.startsWith('--') && equals !== -1)
    return { name: argument.slice(0, equals), value: argument.slice(equals + 1) };
  return { name: argument };
}

/**
 * Long options are accepted by any unambiguous prefix (git's parse-options, npm's nopt, GNU
 * getopt_long): `--upload-pa` is `--upload-pack`. Any prefix of a refused option counts.
 */
function abbreviates(name: string, wanted: string): boolean {
  return name.startsWith('--') && wanted.startsWith('--') && name.length >= 3 && wanted.startsWith(name);
}

/** Is `letter` one of the short options in a cluster such as `-nOsh` (values included)? */
function inCluster(argument: string, letter: string): boolean {
  return /^-[A-Za-z0-9]/.test(argument) && !argument.startsWith('--') && argument.slice(1).includes(letter);
}

/** Finds the first of `names` in args, also as `--name=value` and, for short options, `-xVALUE`. */
function findOption(args: readonly string[], names: readonly string[], from = 1): number {
  for (let index = from; index < args.length; index++) {
    const argument = args[index] as string;
    if (argument === '--') return -1;
    const { name } = splitOption(argument);
    for (const wanted of names) {
      if (name === wanted || abbreviates(name, wanted)) return index;
      if (wanted.length === 2 && wanted.startsWith('-') && !argument.startsWith('--') && argument.startsWith(wanted))
        return index;
    }
  }
  return -1;
}

/**
 * Checks argv against the allowlist and the per-executable rules. Returns the reason it is
 * refused, or undefined when it may run. Pure and synchronous; path arguments are checked
 * separately against the sandbox (see `pathArguments`).
 */
export function checkCommand(
  argv: readonly string[],
  policy: CommandPolicy,
  context: CommandContext = {},
): CommandRefusal | undefined {
  if (argv.length === 0)
    return refuse(0, 'the command is empty: pass argv, e.g. ["git", "status"]', ErrorCodes.ARGUMENTS_INVALID);
  const nul = argv.findIndex((argument) => argument.includes('\0'));
  if (nul !== -1) return refuse(nul, `argument ${nul} contains a NUL byte`);
  const executable = argv[0] as string;
  if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(executable)) {
    return refuse(
      0,
      `"${executable.split('=')[0]}=…" is an environment assignment, not a command: pass variables in the env field`,
    );
  }
  if (executable.trim() === '' || /\s/.test(executable)) {
    return refuse(
      0,
      `"${executable}" looks like a shell command line; run_command takes argv without a shell, e.g. ["git", "log", "--oneline"]`,
      ErrorCodes.ARGUMENTS_INVALID,
    );
  }
  if (/[;&|`$<>(){}*?!'"]/.test(executable)) {
    return refuse(
      0,
      `"${executable}" contains shell syntax; pass the executable's name alone`,
      ErrorCodes.TOOL_EXECUTABLE,
    );
  }
  const isAllowed = (program: string) =>
    policy.allow.some((entry) =>
      process.platform === 'win32' ? entry.toLowerCase() === program.toLowerCase() : entry === program,
    );
  if (!isAllowed(executable)) {
    return refuse(
      0,
      `"${executable}" is not an allowed executable (allowed: ${policy.allow.join(', ') || 'none'})`,
      ErrorCodes.TOOL_EXECUTABLE,
    );
  }
  const name = executableName(executable);
  if (WRAPPERS.has(name)) {
    const program = wrappedProgram(name, argv);
    // `env` alone prints the environment; with the argument rules off (the OS sandbox the boundary),
    // `xargs echo` may run an allowlisted program: the allowlist still holds, its rules are off anyway.
    const harmless =
      program === null || (policy.checkArguments === false && program !== undefined && isAllowed(program));
    if (!harmless) return refuse(0, `"${name}" runs other programs and would bypass the allowlist`);
  }
  if (policy.checkArguments === false) return undefined;
  const rule = RULES[name];
  return rule?.(argv, policy, context);
}

/** Options of env and xargs that take a value in the next argument. */
const WRAPPER_VALUED: Readonly<Record<string, ReadonlySet<string>>> = {
  env: new Set(['-u', '--unset', '-C', '--chdir', '-S', '--split-string']),
  xargs: new Set(['-a', '--arg-file', '-d', '--delimiter', '-E', '-I', '-L', '-n', '--max-args', '-P', '-s']),
};

/**
 * The program a wrapper runs: `null` when it runs none (`env` with only options and
 * assignments), xargs' default `echo`, or undefined when it cannot be told (every other wrapper).
 */
function wrappedProgram(name: string, argv: readonly string[]): string | null | undefined {
  const valued = WRAPPER_VALUED[name];
  if (!valued) return undefined;
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as string;
    if (argument === '--') return argv[index + 1] ?? (name === 'env' ? null : 'echo');
    if (name === 'env' && (argument === '-S' || argument.startsWith('--split-string') || /^-\w*S/.test(argument))) {
      return undefined;
    }
    if (argument.startsWith('-')) {
      if (valued.has(argument)) index++;
      continue;
    }
    if (name === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(argument)) continue;
    return argument;
  }
  return name === 'env' ? null : 'echo';
}

/** Facts about the call that are not in argv. */
export interface CommandContext {
  /** True when the call passes stdin (a program could arrive that way). */
  readonly stdin?: boolean;
}

type Rule = (argv: readonly string[], policy: CommandPolicy, context: CommandContext) => CommandRefusal | undefined;

function optionRule(options: readonly string[], why: string): Rule {
  return (argv) => {
    const index = findOption(argv, options);
    return index === -1 ? undefined : refuse(index, `${argv[0]} ${argv[index]} is refused: ${why}`);
  };
}

function firstPositional(argv: readonly string[], valued: ReadonlySet<string> = new Set()): number {
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as string;
    if (argument === '--') return index + 1 < argv.length ? index + 1 : -1;
    if (!argument.startsWith('-') || argument === '-') return index;
    if (valued.has(argument)) index++;
  }
  return -1;
}

/** git's global options (before the subcommand): the refusal, or where the subcommand is. */
function gitGlobalOptions(argv: readonly string[]): { index: number; refusal?: CommandRefusal } {
  let index = 1;
  const stop = (message: string) => ({ index, refusal: refuse(index, message) });
  for (; index < argv.length; index++) {
    const argument = argv[index] as string;
    if (!argument.startsWith('-')) break;
    const { name } = splitOption(argument);
    if (name === '-c' || (argument.startsWith('-c') && !argument.startsWith('--'))) {
      return stop(
        'git -c is refused: configuration on the command line can run programs (core.sshCommand, core.pager, alias.x=!…)',
      );
    }
    const long = (wanted: string) => name === wanted || abbreviates(name, wanted);
    if (long('--config-env')) return stop('git --config-env is refused: it sets configuration that can run programs');
    if (name === '-C') return stop('git -C is refused: use the cwd field');
    if (long('--git-dir') || long('--work-tree')) {
      return stop(`git ${name} is refused: it can point git outside the workspace`);
    }
    if (long('--exec-path') && argument.includes('=')) {
      return stop('git --exec-path=… is refused: it picks the programs git runs');
    }
    if (name === '-p' || long('--paginate')) return stop('git --paginate is refused: the pager is a program');
    if (GIT_GLOBAL_VALUES.has(argument)) index++;
  }
  return { index };
}

/** Options refused wherever they appear in a git command line. */
function gitAnywhere(argv: readonly string[]): CommandRefusal | undefined {
  for (let position = 1; position < argv.length; position++) {
    const argument = argv[position] as string;
    const { name, value } = splitOption(argument);
    if (/^(ext|fd)::/i.test(value ?? argument)) {
      return refuse(position, `git remote "${argument}" is refused: the ext:: and fd:: transports run commands`);
    }
    const long = (...wanted: string[]) => wanted.some((option) => name === option || abbreviates(name, option));
    if (long('--template'))
      return refuse(position, 'git --template is refused: template directories install hooks that run');
    if (long('--upload-pack', '--receive-pack', '--exec')) {
      return refuse(position, `git ${name} is refused: it names a program to run`);
    }
    if (long('--separate-git-dir')) {
      return refuse(
        position,
        'git --separate-git-dir is refused: a repository outside .git is not protected from edits',
      );
    }
    if (long('--output', '--output-directory', '--open-files-in-pager')) {
      return refuse(
        position,
        `git ${name} is refused: it writes files or starts a program outside the file tools' sandbox`,
      );
    }
    if (long('--config-env')) return refuse(position, 'git --config-env is refused');
  }
  return undefined;
}

/** The rules of one git subcommand (`index` is where it is in argv). */
function gitSubcommand(argv: readonly string[], index: number): CommandRefusal | undefined {
  const subcommand = argv[index];
  if (subcommand === undefined) return undefined;
  if (!GIT_SUBCOMMANDS.has(subcommand)) {
    return refuse(
      index,
      `git ${subcommand} is not an allowed git subcommand (aliases are refused: they can run shell commands)`,
    );
  }
  const rest = argv.slice(index);
  const restRefusal = (names: readonly string[], why: string) => {
    let found = findOption(rest, names);
    if (found === -1) {
      const letters = names.filter((option) => /^-[A-Za-z]$/.test(option)).map((option) => option.slice(1));
      const end = rest.indexOf('--');
      found = rest.findIndex(
        (argument, at) => at > 0 && (end === -1 || at < end) && letters.some((letter) => inCluster(argument, letter)),
      );
    }
    return found === -1 ? undefined : refuse(index + found, `git ${subcommand} ${rest[found]} is refused: ${why}`);
  };
  switch (subcommand) {
    case 'config':
      return gitConfigRefusal(rest, index) ?? restRefusal(GIT_CONFIG_WRITES, 'it changes configuration');
    case 'format-patch':
      return restRefusal(['-o'], 'it writes files outside the file tools');
    case 'submodule':
      return rest.includes('foreach')
        ? refuse(index + rest.indexOf('foreach'), 'git submodule foreach is refused: it runs a shell command')
        : undefined;
    case 'bisect':
      return rest[1] === 'run' ? refuse(index + 1, 'git bisect run is refused: it runs a command') : undefined;
    case 'rebase':
      return (
        restRefusal(['--exec', '-x'], 'it runs a shell command') ??
        restRefusal(['--interactive', '-i'], 'it opens an editor')
      );
    case 'clone':
      return restRefusal(
        ['-u', '--template', '-c', '--config'],
        'it can make git run programs from the new repository',
      );
    case 'ls-remote':
      return restRefusal(['-u'], 'it names a program to run');
    case 'grep':
      return restRefusal(['-O'], 'it starts a pager program');
    case 'help':
      return restRefusal(['--web', '-w', '--info', '-i'], 'it starts a browser or viewer');
    default:
      return undefined;
  }
}

const gitRule: Rule = (argv) => {
  const globals = gitGlobalOptions(argv);
  return globals.refusal ?? gitAnywhere(argv) ?? gitSubcommand(argv, globals.index);
};

const GIT_CONFIG_WRITES = [
  '--add',
  '--replace-all',
  '--unset',
  '--unset-all',
  '--edit',
  '-e',
  '--rename-section',
  '--remove-section',
];
/** `git config` options that take a separate value (so they are not taken for a name or value). */
const GIT_CONFIG_VALUED = new Set(['-f', '--file', '--blob', '--type', '--default', '--comment', '--value']);

/**
 * `git config` may only read. New style: `git config list|get …`. Old style: `--get*`/`--list`,
 * or a single name (which prints its value); a name and a value (`git config core.hooksPath
 * list`, `git config --global user.name get`) is a write, whatever the words.
 */
function gitConfigRefusal(rest: readonly string[], index: number): CommandRefusal | undefined {
  const positionals: string[] = [];
  let reads = false;
  for (let at = 1; at < rest.length; at++) {
    const argument = rest[at] as string;
    const { name } = splitOption(argument);
    if (!argument.startsWith('-')) positionals.push(argument);
    else if (['--get', '--get-all', '--get-regexp', '--get-urlmatch', '--list', '-l'].some((read) => name === read))
      reads = true;
    else if (GIT_CONFIG_VALUED.has(argument)) at++;
  }
  const [first] = positionals;
  const newStyleRead = first === 'list' || first === 'get';
  const oldStyleRead = !['set', 'unset', 'edit', 'rename-section', 'remove-section', 'replace-all'].includes(
    first ?? '',
  );
  const isRead = newStyleRead || reads || (oldStyleRead && positionals.length <= 1);
  return isRead
    ? undefined
    : refuse(index, 'git config may only read (get, list, --get, --list): configuration can run programs');
}

const findRule: Rule = (argv) => {
  const dangerous = ['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls'];
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as string;
    if (dangerous.includes(argument)) {
      return refuse(
        index,
        `find ${argument} is refused: it runs commands, deletes or writes files; use the file tools`,
      );
    }
    if (argument === '-L' || argument === '-follow')
      return refuse(index, `find ${argument} is refused: it follows symlinks out of the workspace`);
  }
  return undefined;
};

function packageRunnerRule(tool: string): Rule {
  return (_argv, policy) => {
    if (policy.allowNpx) return undefined;
    return refuse(0, `${tool} downloads and runs packages; the host has not allowed it (allowNpx)`);
  };
}

/** npm commands a refusal names; npm also takes any unambiguous prefix of a command (`explor`, `exe`). */
const NPM_GUARDED = ['exec', 'explore', 'edit', 'config', 'create', 'init', 'innit'];
const NPM_ALIASES: Readonly<Record<string, string>> = { c: 'config', conf: 'config', x: 'exec', set: 'config' };

function npmSubcommand(word: string | undefined): string | undefined {
  if (word === undefined) return undefined;
  if (NPM_ALIASES[word]) return NPM_ALIASES[word];
  if (NPM_GUARDED.includes(word) || word.length < 3) return word;
  return NPM_GUARDED.find((command) => command.startsWith(word)) ?? word;
}

const npmRule: Rule = (argv, policy) => {
  const subcommandIndex = firstPositional(argv);
  const written = subcommandIndex === -1 ? undefined : argv[subcommandIndex];
  const subcommand = npmSubcommand(written);
  const runners = ['exec', 'x', 'create', 'innit', 'init'];
  if (subcommand && runners.includes(subcommand) && !policy.allowNpx) {
    const initWithPackage =
      (subcommand === 'init' || subcommand === 'innit') && firstPositional(argv.slice(subcommandIndex)) !== -1;
    if (subcommand === 'exec' || subcommand === 'x' || subcommand === 'create' || initWithPackage) {
      return refuse(
        subcommandIndex,
        `npm ${subcommand} downloads and runs packages; the host has not allowed it (allowNpx)`,
      );
    }
  }
  if (subcommand === 'explore' || subcommand === 'edit')
    return refuse(subcommandIndex, `npm ${subcommand} opens a shell or an editor`);
  if (written === 'set') return refuse(subcommandIndex, 'npm set is refused: it writes npm configuration');
  if (subcommand === 'config') {
    const action = argv[subcommandIndex + 1];
    if (action && ['set', 'edit', 'delete', 'fix'].some((word) => word.startsWith(action)))
      return refuse(subcommandIndex + 1, `npm config ${action} is refused: npm configuration can name programs to run`);
  }
  const option = findOption(argv, [
    '--script-shell',
    '--shell',
    '--node-options',
    '--call',
    '-c',
    '--global',
    '-g',
    '--location',
    '--userconfig',
    '--globalconfig',
    '--prefix',
  ]);
  if (option !== -1)
    return refuse(
      option,
      `npm ${argv[option]} is refused: it changes which programs run or writes outside the workspace`,
    );
  return undefined;
};

const pnpmRule: Rule = (argv, policy) => {
  const subcommandIndex = firstPositional(argv);
  const subcommand = subcommandIndex === -1 ? undefined : argv[subcommandIndex];
  if (subcommand && ['dlx', 'exec', 'create'].includes(subcommand) && !policy.allowNpx) {
    return refuse(
      subcommandIndex,
      `${argv[0]} ${subcommand} downloads and runs packages; the host has not allowed it (allowNpx)`,
    );
  }
  const option = findOption(argv, ['--shell-mode', '-c', '--global', '-g', '--config', '--script-shell']);
  return option === -1 ? undefined : refuse(option, `${argv[0]} ${argv[option]} is refused`);
};

function hasInlineProgram(
  argv: readonly string[],
  valued: ReadonlySet<string>,
  evalOptions: readonly string[],
): CommandRefusal | undefined {
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as string;
    if (argument === '--') return undefined;
    if (!argument.startsWith('-')) return undefined;
    if (argument === '-') return refuse(index, `${argv[0]} - reads a program from stdin; pass a script file`);
    const { name, value } = splitOption(argument);
    if (evalOptions.includes(name)) return refuse(index, `${argv[0]} ${name} runs inline code; pass a script file`);
    // Combined short flags such as -pe.
    if (
      /^-[a-zA-Z]+$/.test(argument) &&
      argument.length > 2 &&
      evalOptions.some((option) => option.length === 2 && argument.includes(option[1] as string))
    ) {
      return refuse(index, `${argv[0]} ${argument} runs inline code; pass a script file`);
    }
    const attached = value ?? (valued.has(argument) ? argv[index + 1] : undefined);
    if (attached !== undefined && /^(data|https?|blob):/i.test(attached)) {
      return refuse(
        index,
        `${argv[0]} ${name} with a ${attached.split(':')[0]}: URL loads code from outside the workspace`,
      );
    }
    if (valued.has(argument)) index++;
  }
  return undefined;
}

const nodeRule: Rule = (argv, policy, context) => {
  const script = firstPositional(argv, NODE_OPTION_VALUES);
  // Options after the script belong to the script, not to node.
  const inspect = findOption(argv.slice(0, script === -1 ? argv.length : script), [
    '--inspect',
    '--inspect-brk',
    '--inspect-wait',
    '--inspect-port',
    '--debug-port',
  ]);
  if (inspect !== -1)
    return refuse(inspect, `node ${argv[inspect]} is refused: the inspector lets anyone on the port run code`);
  if (policy.allowNodeEval) return undefined;
  return (
    hasInlineProgram(argv, NODE_OPTION_VALUES, ['-e', '--eval', '-p', '--print', '-i', '--interactive']) ??
    stdinProgram(argv, NODE_OPTION_VALUES, context)
  );
};

/** An interpreter given stdin and no script runs stdin as its program. */
function stdinProgram(
  argv: readonly string[],
  valued: ReadonlySet<string>,
  context: CommandContext,
): CommandRefusal | undefined {
  if (!context.stdin || firstPositional(argv, valued) !== -1) return undefined;
  // `-m module` (python) names the program; version and help print and exit.
  const informational = argv.some((argument) => ['--version', '-v', '-V', '--help', '-h', '-m'].includes(argument));
  return informational
    ? undefined
    : refuse(0, `${argv[0]} with stdin and no script runs stdin as a program; pass a script file`);
}

const bunRule: Rule = (argv, policy) => {
  const subcommandIndex = firstPositional(argv);
  const subcommand = subcommandIndex === -1 ? undefined : argv[subcommandIndex];
  if (subcommand && ['x', 'create'].includes(subcommand) && !policy.allowNpx) {
    return refuse(
      subcommandIndex,
      `bun ${subcommand} downloads and runs packages; the host has not allowed it (allowNpx)`,
    );
  }
  if (policy.allowNodeEval) return undefined;
  return hasInlineProgram(argv, new Set(['-r', '--preload']), ['-e', '--eval', '-p', '--print']);
};

const denoRule: Rule = (argv, policy) => {
  const subcommandIndex = firstPositional(argv);
  const subcommand = subcommandIndex === -1 ? undefined : argv[subcommandIndex];
  if (!policy.allowNodeEval && (subcommand === 'eval' || subcommand === 'repl' || argv.length === 1)) {
    return refuse(Math.max(0, subcommandIndex), `deno ${subcommand ?? ''} runs inline code; pass a script file`);
  }
  return undefined;
};

function interpreterRule(evalOptions: readonly string[], valued: readonly string[] = []): Rule {
  const valuedSet = new Set(valued);
  return (argv, _policy, context) =>
    hasInlineProgram(argv, valuedSet, evalOptions) ?? stdinProgram(argv, valuedSet, context);
}

const POWERSHELL_INLINE =
  /^[-/](c|co|com|comm|comma|comman|command|e|ec|en|enc|enco|encod|encode|encoded|encodedc|encodedco|encodedcom|encodedcomm|encodedcomma|encodedcomman|encodedcommand|commandwithargs|cwa)$/i;

const shellRule: Rule = (argv, _policy, context) => {
  const name = executableName(argv[0] as string);
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as string;
    const inline =
      name === 'cmd'
        ? /^\/[ckr]$/i.test(argument)
        : name === 'pwsh' || name === 'powershell'
          ? POWERSHELL_INLINE.test(argument)
          : /^-[a-zA-Z]*[csi][a-zA-Z]*$/.test(argument) && !argument.startsWith('--');
    if (inline)
      return refuse(
        index,
        `${argv[0]} ${argument} runs an inline or interactive command line; run the program itself with argv`,
      );
    if (!argument.startsWith('-')) return undefined;
  }
  return refuse(0, `${argv[0]} without a script file runs commands from ${context.stdin ? 'stdin' : 'a terminal'}`);
};

/** GNU sed's `e` command and `s///e` flag run commands; `w`/`W`/`r`/`R` read and write other files. Addresses may be negated (`2!e`), stepped (`0~2`) or ranges. */
const SED_DANGER = /(^|[;\n{}/])[\s0-9,$~+!gpiImM]*[eEwWrR](\s|;|}|$)/;

const sedRule: Rule = (argv) => {
  const file = findOption(argv, ['-f', '--file']);
  if (file !== -1) return refuse(file, 'sed -f is refused: a script file cannot be checked');
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as string;
    const script = argument.startsWith('--expression=')
      ? argument.slice('--expression='.length)
      : /^-[a-zA-Z]*e./.test(argument) && !argument.startsWith('--')
        ? argument.slice(argument.indexOf('e') + 1)
        : argument;
    if (SED_DANGER.test(script) && (script !== argument || !argument.startsWith('-'))) {
      return refuse(
        index,
        `sed script ${JSON.stringify(argument)} is refused: its e, w or r command runs programs or touches other files`,
      );
    }
  }
  return undefined;
};

/** What an awk program must not contain: commands (system, pipes), output redirection, reading other files, gawk directives. */
const AWK_DANGER = /system\s*\(|\||\bprintf?\b[^;{}]*>|\bgetline\b[^;{}]*<|@(load|include|namespace)\b/;

/** The program text an argument carries: a positional, or the value of `-e`/`--source` (gawk). */
function awkProgramText(argument: string): string | undefined {
  if (!argument.startsWith('-')) return argument;
  const { name, value } = splitOption(argument);
  if (value !== undefined && abbreviates(name, '--source')) return value;
  return /^-e./.test(argument) ? argument.slice(2) : undefined;
}

const awkRule: Rule = (argv) => {
  const loads = findOption(argv, ['-f', '--file', '-i', '--include', '-l', '--load', '-E', '--exec']);
  if (loads !== -1) {
    return refuse(
      loads,
      'awk programs from files, includes, in-place editing and extensions are refused: the rules cannot see into them',
    );
  }
  for (let index = 1; index < argv.length; index++) {
    const text = awkProgramText(argv[index] as string);
    if (text !== undefined && AWK_DANGER.test(text)) {
      return refuse(
        index,
        'awk programs that run commands (system, pipes), redirect output (print > file) or read other files (getline < file) are refused',
      );
    }
  }
  return undefined;
};

const makeRule: Rule = (argv) => {
  const variable = argv.findIndex(
    (argument, index) => index > 0 && /^(SHELL|MAKESHELL|\.SHELLFLAGS)\s*[:+?]?=/.test(argument),
  );
  if (variable !== -1)
    return refuse(variable, "overriding make's SHELL is refused: it picks the program every recipe runs in");
  return optionRule(['--eval', '-E'], 'it adds rules that run commands')(argv, { allow: [] }, {});
};

/**
 * Adds a check of short-option clusters (`-xhf`, `-nR`, and tar's dashless `xhf`) for letters
 * that `findOption` cannot see inside a cluster.
 */
function withClusters(rule: Rule, letters: string, why: string): Rule {
  return (argv, policy, context) => {
    const found = rule(argv, policy, context);
    if (found) return found;
    for (let index = 1; index < argv.length; index++) {
      const argument = argv[index] as string;
      if (argument === '--') break;
      const cluster =
        /^-[A-Za-z]+$/.test(argument) ||
        (index === 1 && executableName(argv[0] as string) === 'tar' && /^[A-Za-z]+$/.test(argument));
      if (cluster && [...letters].some((letter) => argument.replace(/^-/, '').includes(letter))) {
        return refuse(index, `${argv[0]} ${argument} is refused: ${why}`);
      }
    }
    return undefined;
  };
}

export const RULES: Readonly<Record<string, Rule>> = {
  grep: withClusters(
    optionRule(['-R', '--dereference-recursive'], 'it follows symlinks out of the workspace; use -r'),
    'R',
    'it follows symlinks out of the workspace; use -r',
  ),
  git: gitRule,
  find: findRule,
  npx: packageRunnerRule('npx'),
  pnpx: packageRunnerRule('pnpx'),
  bunx: packageRunnerRule('bunx'),
  npm: npmRule,
  pnpm: pnpmRule,
  yarn: pnpmRule,
  node: nodeRule,
  nodejs: nodeRule,
  bun: bunRule,
  deno: denoRule,
  python: interpreterRule(['-c'], ['-m', '-W', '-X']),
  pypy: interpreterRule(['-c']),
  perl: interpreterRule(['-e', '-E']),
  ruby: interpreterRule(['-e']),
  php: interpreterRule(['-r', '-a']),
  tar: withClusters(
    optionRule(
      [
        '-h',
        '--dereference',
        '--to-command',
        '--use-compress-program',
        '-I',
        '--checkpoint-action',
        '--info-script',
        '-F',
        '--new-volume-script',
        '--rsh-command',
        '--rmt-command',
      ],
      'it runs a program or follows symlinks out of the workspace',
    ),
    'hIF',
    'it runs a program or follows symlinks out of the workspace',
  ),
  rsync: optionRule(['-e', '--rsh', '--rsync-path'], 'it runs a program'),
  ssh: optionRule(['-o', '-F'], 'ssh options can run local commands (ProxyCommand, LocalCommand)'),
  scp: optionRule(['-o', '-F', '-S'], 'it can run a program (ProxyCommand, -S)'),
  cargo: optionRule(['--config', '-Z'], 'configuration on the command line can name programs to run'),
  go: optionRule(['-toolexec', '-exec'], 'it names a program to run'),
  sed: sedRule,
  awk: awkRule,
  gawk: awkRule,
  mawk: awkRule,
  make: makeRule,
  gmake: makeRule,
  ...Object.fromEntries([...SHELLS].map((shell) => [shell, shellRule])),
};

/** Where a path may hide in an argument: `/abs`, `--out=/abs`, `-o/abs`, `@/abs` (curl). */
function candidates(argument: string): string[] {
  const found: string[] = [];
  const add = (value: string | undefined) => {
    if (value === undefined || value === '') return;
    found.push(value);
    if (value.startsWith('@')) found.push(value.slice(1));
  };
  if (argument.startsWith('--')) {
    const equals = argument.indexOf('=');
    if (equals !== -1) add(argument.slice(equals + 1));
  } else if (/^-[A-Za-z]./.test(argument)) {
    add(argument.slice(2));
  } else {
    add(argument);
  }
  return found;
}

/** Does this value name a place the sandbox must check (absolute, `~`, or climbing with `..`)? */
export function looksLikePath(value: string): boolean {
  if (value.includes('://')) return false;
  if (value === '/dev/null' || value === 'NUL') return false;
  if (value.startsWith('/') || value.startsWith('\\') || value.startsWith('~') || /^[A-Za-z]:[\\/]/.test(value))
    return true;
  return value.split(/[\\/]/).some((segment) => segment === '..');
}

/**
 * Values in argv (after the executable) that may name files. `always` ones (absolute, `~`,
 * `..`) must resolve inside the workspace; the others must too when they exist — a
 * relative name can still be a symlink that leads out.
 */
export function pathArguments(argv: readonly string[]): { index: number; value: string; always: boolean }[] {
  const found: { index: number; value: string; always: boolean }[] = [];
  const tar = executableName(argv[0] ?? '') === 'tar';
  for (let index = 1; index < argv.length; index++) {
    const argument = argv[index] as string;
    const values = candidates(argument);
    const attached = tar ? tarClusterValue(argument) : undefined;
    if (attached !== undefined) values.push(attached);
    for (const value of values) {
      if (/^file:/i.test(value)) {
        found.push({ index, value: fileUrlPath(value), always: true });
        continue;
      }
      if (value.includes('://') || value === '/dev/null') continue;
      found.push({ index, value, always: looksLikePath(value) });
    }
  }
  return found;
}

/** tar's short options that take a file or directory: the archive, -C, lists, snapshots, dates from files. */
const TAR_PATH_LETTERS = 'fCTXgKN';

/** In a tar cluster such as `-cvf<archive>` or `-xvC<dir>`, the value glued after the first letter taking one. */
function tarClusterValue(argument: string): string | undefined {
  if (!/^-[A-Za-z]/.test(argument) || argument.startsWith('--')) return undefined;
  for (let position = 1; position < argument.length; position++) {
    const letter = argument[position] as string;
    if (!/[A-Za-z]/.test(letter)) return undefined;
    if (TAR_PATH_LETTERS.includes(letter)) {
      const value = argument.slice(position + 1);
      return value === '' ? undefined : value;
    }
  }
  return undefined;
}

/** A file: URL is a path in disguise; one that does not parse stands for the file system root, which is refused. */
function fileUrlPath(value: string): string {
  try {
    return fileURLToPath(value);
  } catch {
    return '/';
  }
}
