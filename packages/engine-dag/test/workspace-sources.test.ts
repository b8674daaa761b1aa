// The tests import the workspace's packages by name and get their sources (vitest.package.ts at the
// repository's root): an edit to packages/core/src is what these tests run, with no build between.
// Were `@stepwise/core` resolved to its `dist`, the functions below would be other objects.
import { fileURLToPath } from 'node:url';
import * as core from '@stepwise/core';
import * as coreEngine from '@stepwise/core/engine';
import * as coreStore from '@stepwise/core/store';
import * as coreTesting from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';

/** Core's source file, imported by path (a string, so the type check does not compile core's sources again). */
async function coreSource(file: string): Promise<Record<string, unknown>> {
  return import(/* @vite-ignore */ fileURLToPath(new URL(`../../core/src/${file}`, import.meta.url)));
}

describe('@stepwise/core in these tests', () => {
  it('is packages/core/src/index.ts', async () => {
    const source = await coreSource('index.ts');
    expect(core.validatePlan).toBe(source.validatePlan);
    expect(core.StepwiseError).toBe(source.StepwiseError);
  });

  it('is packages/core/src/testing/index.ts for @stepwise/core/testing', async () => {
    const source = await coreSource('testing/index.ts');
    expect(coreTesting.MemoryStore).toBe(source.MemoryStore);
  });

  it('is packages/core/src/engine.ts and store.ts for @stepwise/core/engine and /store', async () => {
    expect(coreEngine.createPolicyEngine).toBe((await coreSource('engine.ts')).createPolicyEngine);
    expect(coreStore.foldRun).toBe((await coreSource('store.ts')).foldRun);
  });

  it('is one copy: the entry points share their classes', () => {
    expect(new coreTesting.MemoryStore()).toBeInstanceOf(core.MemoryStore);
    const error = coreEngine.planInvalidError([{ code: 'E001', kind: 'schema', path: '/id', message: 'required' }]);
    expect(error).toBeInstanceOf(core.StepwiseError);
  });
});
