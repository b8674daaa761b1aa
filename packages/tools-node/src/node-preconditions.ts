import path from 'node:path';
import { ErrorCodes, type Precondition, type PreconditionEntry, StepwiseError } from '@stepwise/core';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

/** Marker files that make a directory a project of each kind. */
export const PROJECT_MARKERS: Readonly<Record<string, readonly string[]>> = {
  npm: ['package.json'],
  cargo: ['Cargo.toml'],
  python: ['pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt'],
  go: ['go.mod'],
};

async function kindOf(sandbox: WorkspaceSandbox, precondition: Precondition) {
  const target = precondition.path ?? '.';
  try {
    const resolved = await sandbox.resolve(target);
    if (!resolved.exists) return { target, kind: 'missing' as const };
    const stats = await sandbox.fileSystem.stat(resolved.absolute);
    return { target, kind: stats.isDirectory() ? ('directory' as const) : ('file' as const), resolved };
  } catch (error) {
    if (StepwiseError.isInstance(error) && error.code === ErrorCodes.SANDBOX_VIOLATION) {
      return { target, kind: 'outside' as const, message: error.message };
    }
    return { target, kind: 'missing' as const };
  }
}

/**
 * Precondition checkers for the core registry: `file_exists` (E101), `dir_exists` (E103)
 * and `project` (E102: `{ kind: "project", type: "npm" | "cargo" | "python" | "go", path? }`,
 * any kind when `type` is absent). Paths go through the sandbox; outside paths fail.
 */
export function nodePreconditions(sandbox: WorkspaceSandbox): Record<string, PreconditionEntry> {
  return {
    file_exists: {
      code: ErrorCodes.PRECONDITION_FILE,
      async check(precondition) {
        if (precondition.path === undefined) return { ok: false, message: 'file_exists needs a path' };
        const found = await kindOf(sandbox, precondition);
        if (found.kind === 'file') return true;
        if (found.kind === 'outside') return { ok: false, message: found.message };
        return {
          ok: false,
          message:
            found.kind === 'directory'
              ? `${found.target} is a directory, not a file`
              : `${found.target} does not exist`,
        };
      },
    },
    dir_exists: {
      code: ErrorCodes.PRECONDITION_DIRECTORY,
      async check(precondition) {
        if (precondition.path === undefined) return { ok: false, message: 'dir_exists needs a path' };
        const found = await kindOf(sandbox, precondition);
        if (found.kind === 'directory') return true;
        if (found.kind === 'outside') return { ok: false, message: found.message };
        return {
          ok: false,
          message:
            found.kind === 'file' ? `${found.target} is a file, not a directory` : `${found.target} does not exist`,
        };
      },
    },
    project: {
      code: ErrorCodes.PRECONDITION_PROJECT,
      async check(precondition) {
        const type = (precondition.type ?? precondition.project) as unknown;
        if (type !== undefined && (typeof type !== 'string' || !(type in PROJECT_MARKERS))) {
          return { ok: false, message: `unknown project type ${JSON.stringify(type)} (npm, cargo, python, go)` };
        }
        const found = await kindOf(sandbox, precondition);
        if (found.kind === 'outside') return { ok: false, message: found.message };
        if (found.kind !== 'directory') return { ok: false, message: `${found.target} is not a directory` };
        const markers =
          type === undefined ? Object.values(PROJECT_MARKERS).flat() : (PROJECT_MARKERS[type as string] ?? []);
        for (const marker of markers) {
          const markerPath = path.posix.join(found.target.replace(/\\/g, '/'), marker);
          const markerKind = await kindOf(sandbox, { kind: 'file_exists', path: markerPath });
          if (markerKind.kind === 'file') return true;
        }
        return {
          ok: false,
          message: `${found.target} is not ${type === undefined ? 'a project' : `a ${type} project`}: none of ${markers.join(', ')} found`,
        };
      },
    },
  };
}
