import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const directory = mkdtempSync(join(tmpdir(), 'stepwise-lazy-ajv-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('loading ajv', () => {
  it('waits for the first JSON Schema: importing core and checking plans of zod-schema tools never loads it', () => {
    const fixture = fileURLToPath(new URL('./fixtures/lazy-ajv.mjs', import.meta.url));
    const child = spawnSync(process.execPath, [fixture, join(directory, 'resolved.txt')], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({
      afterImport: false,
      afterZodTool: false,
      afterJsonSchema: true,
      zodPlan: true,
      zodRefused: true,
      jsonPlan: false,
    });
  });
});
