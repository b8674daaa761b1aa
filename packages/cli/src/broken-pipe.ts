/**
 * Once the reader of stdout or stderr goes away (`stepwise run --json | head`), every write to it
 * fails with EPIPE — not by throwing but as an `error` event on the stream, which would crash the
 * process in the middle of a run and leave its journal saying `running`. This drops EPIPE on the
 * given streams: the stream is destroyed, later writes to it go nowhere, and the command carries on
 * to its own end and exit code. Any other stream error still crashes, as it did.
 */
export function ignoreBrokenPipes(streams: readonly NodeJS.WritableStream[]): void {
  for (const stream of streams) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
    });
  }
}
