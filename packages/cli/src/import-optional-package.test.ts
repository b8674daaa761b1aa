import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { StepwiseError } from '@stepwise/core';
import { afterAll, describe, expect, it } from 'vitest';
import { importOptionalPackage, type OptionalPackage } from './import-optional-package.js';

// A name that cannot be installed here, standing in for an optional peer the host left out.
const MISSING = '@stepwise/engine-sequential-not-installed' as OptionalPackage;
const directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-optional-'));
afterAll(() => rm(directory, { recursive: true, force: true }));

describe('importOptionalPackage', () => {
  it('returns the module when the package is installed', async () => {
    const module = await importOptionalPackage(
      '@stepwise/engine-sequential',
      'the sequential engine',
      '/engine',
      () => import('@stepwise/engine-sequential'),
    );
    expect(typeof module.sequentialEngine).toBe('function');
  });

  it('turns a missing package into E601 naming the package and how to install it', async () => {
    const error = await importOptionalPackage(MISSING, 'the sequential engine', '/engine', () => import(MISSING)).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(StepwiseError.isInstance(error)).toBe(true);
    const typed = error as StepwiseError;
    expect(typed.code).toBe('E601');
    expect(typed.location).toBe('/engine');
    expect(typed.details).toEqual({ package: MISSING });
    expect(typed.message).toBe(
      `the sequential engine needs ${MISSING}, which is not installed: npm install ${MISSING}`,
    );
  });

  it('does not blame the package when something it imports is missing', async () => {
    // An installed module whose own dependency is absent: the original error must come through.
    const module = path.join(directory, 'broken.mjs');
    await writeFile(module, "import 'stepwise-dependency-that-is-absent';\n");
    const error = await importOptionalPackage(
      MISSING,
      'the sequential engine',
      '/engine',
      () => import(pathToFileURL(module).href),
    ).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(StepwiseError.isInstance(error)).toBe(false);
    expect((error as { code?: string }).code).toBe('ERR_MODULE_NOT_FOUND');
    expect(String(error)).toContain('stepwise-dependency-that-is-absent');
  });

  it('passes other failures through unchanged', async () => {
    const failure = new Error('the module threw while loading');
    await expect(
      importOptionalPackage('@stepwise/tools-mcp', 'an MCP server plugin', '/plugins', () => Promise.reject(failure)),
    ).rejects.toBe(failure);
  });
});
