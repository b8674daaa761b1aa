/** Server processes started by this module that are still running. */
const living = new Set<number>();
let installed = false;

/**
 * Kills every tracked server when this process exits, however it exits through `process.exit`
 * or an empty event loop. An `exit` listener may only do synchronous work, so this is SIGKILL:
 * there is no time left to wait for a graceful shutdown. A process killed by a signal runs no
 * listener at all; its servers then see stdin close, which ends every well-behaved MCP server.
 */
function killAll(): void {
  for (const pid of living) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  living.clear();
}

export function trackChild(pid: number): void {
  if (!installed) {
    process.on('exit', killAll);
    installed = true;
  }
  living.add(pid);
}

export function untrackChild(pid: number): void {
  living.delete(pid);
}

/** Pids still tracked (for tests and diagnostics). */
export function trackedChildren(): readonly number[] {
  return [...living];
}
