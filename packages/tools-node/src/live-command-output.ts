import { REDACTED, StreamRedactor } from '@stepwise/core/engine';

/** Replaces every occurrence of the host's secret values (scrubbed from the child's environment). */
export function scrub(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) if (result.includes(secret)) result = result.split(secret).join(REDACTED);
  return result;
}

/** Where a running command's output goes while it runs; `end` releases what is held once it exited. */
export interface LiveCommandOutput {
  readonly write: (stream: 'stdout' | 'stderr', text: string) => void;
  end(): void;
}

/**
 * Shows a command's output while it runs through `ctx.output`, with the values this tool scrubs
 * (the host's secrets, which the run's own redactor may not know) taken out as a stream: a value
 * split between two reads of the pipe is caught whole (see `StreamRedactor`).
 */
export function liveCommandOutput(
  output: (stream: 'stdout' | 'stderr', text: string) => void,
  secrets: readonly string[],
): LiveCommandOutput {
  if (secrets.length === 0) return { write: output, end: () => undefined };
  const streams = {
    stdout: new StreamRedactor((text) => scrub(text, secrets), { quietMs: 100 }),
    stderr: new StreamRedactor((text) => scrub(text, secrets), { quietMs: 100 }),
  };
  const release = (final: boolean) => {
    const now = Date.now();
    for (const name of ['stdout', 'stderr'] as const) {
      const text = streams[name].take(now, final);
      if (text) output(name, text);
    }
  };
  const timer = setInterval(() => release(false), 100).unref();
  return {
    write: (stream, text) => {
      streams[stream].write(text, Date.now());
      release(false);
    },
    end: () => {
      clearInterval(timer);
      release(true);
    },
  };
}
