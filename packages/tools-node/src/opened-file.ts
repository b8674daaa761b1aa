import { ErrorCodes, SandboxViolation, ToolError } from '@stepwise/core';
import { whereOpened } from './directory-descriptor.js';
import { fileSystemError } from './file-errors.js';
import { errorCode } from './file-system.js';
import type { ResolvedPath, WorkspaceSandbox } from './workspace-sandbox.js';

type Handle = Awaited<ReturnType<WorkspaceSandbox['fileSystem']['open']>>;

/**
 * Throws unless an open descriptor really is inside the workspace and not protected. The check
 * is made on the opened object (see `directory-descriptor.ts`), so a parent directory swapped for
 * a symlink between the path check and the open is caught, whatever it pointed to.
 */
export async function checkOpened(
  sandbox: WorkspaceSandbox,
  fd: number,
  opened: string,
  input: string,
): Promise<string> {
  const real = whereOpened(fd, opened);
  if (real === undefined || !(await sandbox.contains(real))) {
    throw new SandboxViolation(`${input} led outside the workspace when it was opened (changed after it was checked)`, {
      location: input,
      details: { reason: 'symlink-escape' },
    });
  }
  if ((await sandbox.protectedPaths()).covers(real)) {
    throw new SandboxViolation(`${input} led to a protected path when it was opened`, {
      location: input,
      details: { reason: 'protected' },
    });
  }
  return real;
}

/** Opens a resolved path (`flags` should carry O_NOFOLLOW) and checks what was opened; `action` names it in errors. */
export async function openChecked(
  sandbox: WorkspaceSandbox,
  resolved: ResolvedPath,
  flags: number,
  action: string,
): Promise<Handle> {
  let handle: Handle;
  try {
    handle = await sandbox.fileSystem.open(resolved.absolute, flags);
  } catch (error) {
    if (errorCode(error) === 'ELOOP') {
      throw new ToolError({
        code: ErrorCodes.SANDBOX_VIOLATION,
        message: `${resolved.input} became a symbolic link after it was checked`,
        location: resolved.input,
      });
    }
    throw fileSystemError(error, resolved.input, action);
  }
  try {
    await checkOpened(sandbox, handle.fd, resolved.absolute, resolved.input);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}
