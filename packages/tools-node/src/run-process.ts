import { type ChildProcess, spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';

export interface RunProcessOptions {
  /** Absolute path of the program. */
  readonly file: string;
  /** Arguments after the program (argv[1…]). */
  readonly args: readonly string[];
  /** What the program sees as argv[0]. */
  readonly argv0?: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly stdin?: string;
  readonly timeoutMs: number;
  /** Cap per stream; beyond it the middle is dropped and a marker says how much. */
  readonly maxOutputBytes: number;
  /** Time between SIGTERM and SIGKILL when the tree is stopped. */
  readonly killGraceMs: number;
  readonly signal?: AbortSignal;
  /** Called once the program started, with its pid (the leader of its own process group). */
  readonly onSpawn?: (pid: number) => unknown;
  /** Called with each piece of output as it arrives, decoded as UTF-8 (a character split between reads is kept whole). */
  readonly onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
}

export interface ProcessResult {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  readonly durationMs: number;
  readonly pid: number | undefined;
}

/**
 * Keeps the first and the last half of a stream's bytes within a cap: the head shows what
 * started, the tail usually holds the error.
 */
class OutputCapture {
  readonly #half: number;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  #tail: Buffer[] = [];
  #tailBytes = 0;
  total = 0;

  constructor(maxBytes: number) {
    this.#half = Math.max(1, Math.floor(maxBytes / 2));
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.#headBytes < this.#half) {
      const take = Math.min(this.#half - this.#headBytes, rest.length);
      this.#head.push(rest.subarray(0, take));
      this.#headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.#tail.push(rest);
    this.#tailBytes += rest.length;
    while (this.#tailBytes - (this.#tail[0]?.length ?? 0) >= this.#half) {
      this.#tailBytes -= (this.#tail.shift() as Buffer).length;
    }
  }

  get truncated(): boolean {
    return this.total > this.#headBytes + Math.min(this.#tailBytes, this.#half);
  }

  text(): string {
    const head = Buffer.concat(this.#head);
    let tail = Buffer.concat(this.#tail);
    if (tail.length > this.#half) tail = tail.subarray(tail.length - this.#half);
    const dropped = this.total - head.length - tail.length;
    if (dropped <= 0) return Buffer.concat([head, tail]).toString('utf8');
    return `${head.toString('utf8')}\n[… ${dropped} bytes truncated …]\n${tail.toString('utf8')}`;
  }
}

/** Signals the whole process group (the child was started as its leader), or the tree on Windows. */
export function killTree(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  if (process.platform === 'win32') {
    spawn('taskkill', ['/pid', String(child.pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true }).on(
      'error',
      () => undefined,
    );
    return;
  }
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/** Starts the program as the leader of a new process group (not on Windows, which has none). */
function startProcess(options: RunProcessOptions): ChildProcess {
  return spawn(options.file, options.args as string[], {
    cwd: options.cwd,
    env: options.env,
    argv0: options.argv0,
    detached: process.platform !== 'win32',
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    windowsHide: true,
    shell: false,
  });
}

function reportSpawn(child: ChildProcess, onSpawn: RunProcessOptions['onSpawn']): void {
  if (child.pid === undefined) return;
  try {
    // A hook that fails must not leave the process unwatched: its error is the hook's to report.
    Promise.resolve(onSpawn?.(child.pid)).catch(() => undefined);
  } catch {
    // Same as above, for a hook that throws synchronously.
  }
}

/** Stops the process tree on timeout or abort: SIGTERM, then SIGKILL after the grace time. */
function guardProcess(child: ChildProcess, options: RunProcessOptions) {
  const state = { timedOut: false, aborted: false };
  let killTimer: NodeJS.Timeout | undefined;
  const stop = () => {
    killTree(child, 'SIGTERM');
    killTimer ??= setTimeout(() => killTree(child, 'SIGKILL'), options.killGraceMs);
  };
  const timer = setTimeout(() => {
    state.timedOut = true;
    stop();
  }, options.timeoutMs);
  const onAbort = () => {
    state.aborted = true;
    stop();
  };
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  return {
    state,
    /** No more timeout nor abort; a SIGKILL already scheduled still comes. */
    release(): void {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    },
    dispose(): void {
      clearTimeout(timer);
      clearTimeout(killTimer);
      options.signal?.removeEventListener('abort', onAbort);
    },
  };
}

/** Captures both output streams (showing them as they arrive when asked) and writes the input, if any. */
function connectStreams(
  child: ChildProcess,
  options: Pick<RunProcessOptions, 'stdin' | 'onOutput'>,
  stdout: OutputCapture,
  stderr: OutputCapture,
) {
  const { stdin, onOutput } = options;
  for (const [name, capture] of [
    ['stdout', stdout],
    ['stderr', stderr],
  ] as const) {
    const stream = child[name];
    if (!onOutput) {
      stream?.on('data', (chunk: Buffer) => capture.push(chunk));
      continue;
    }
    const decoder = new StringDecoder('utf8');
    stream?.on('data', (chunk: Buffer) => {
      capture.push(chunk);
      const text = decoder.write(chunk);
      if (text) onOutput(name, text);
    });
    stream?.on('end', () => {
      const rest = decoder.end();
      if (rest) onOutput(name, rest);
    });
  }
  if (stdin !== undefined && child.stdin) {
    // A program that exits without reading its input makes the write fail with EPIPE: not our error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
  }
}

/**
 * Runs a program without a shell as the leader of a new process group, so a timeout or an
 * abort stops it and everything it started (SIGTERM, then SIGKILL after the grace time).
 * When the leader exits, whatever it left behind in its group is killed too: no process
 * outlives the call. Rejects only when the program cannot be started.
 */
export function runProcess(options: RunProcessOptions): Promise<ProcessResult> {
  return new Promise<ProcessResult>((resolve, reject) => {
    const started = performance.now();
    const stdout = new OutputCapture(options.maxOutputBytes);
    const stderr = new OutputCapture(options.maxOutputBytes);
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let child: ChildProcess;
    try {
      child = startProcess(options);
    } catch (error) {
      reject(error);
      return;
    }
    reportSpawn(child, options.onSpawn);
    const guard = guardProcess(child, options);
    connectStreams(child, options, stdout, stderr);

    let closeTimer: NodeJS.Timeout | undefined;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      guard.dispose();
      clearTimeout(closeTimer);
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout: stdout.text(),
        stderr: stderr.text(),
        stdoutBytes: stdout.total,
        stderrBytes: stderr.total,
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        timedOut: guard.state.timedOut,
        aborted: guard.state.aborted,
        durationMs: performance.now() - started,
        pid: child.pid,
      });
    };
    child.once('error', (error) => {
      guard.release();
      if (child.pid === undefined) reject(error);
    });
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      // Descendants still in the group would keep the pipes open and outlive the call.
      killTree(child, 'SIGKILL');
      // A descendant that left the group may still hold the pipes: do not wait for it forever.
      closeTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, 2000);
    });
    child.once('close', (code, signal) => {
      exit ??= { code, signal };
      finish();
    });
  });
}
