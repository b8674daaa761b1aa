import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, PACKAGE_DIRECTORY } from './helpers.js';

const RECORD_RESOLUTIONS = path.join(PACKAGE_DIRECTORY, '..', '..', 'scripts', 'record-resolutions.mjs');
const directory = mkdtempSync(path.join(tmpdir(), 'stepwise-cli-version-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Runs the built CLI with `args`; its output and the modules it resolved. */
function resolvedBy(args: string[]) {
  const record = path.join(directory, `${args.join('_')}.txt`);
  const child = spawnSync(process.execPath, ['--import', RECORD_RESOLUTIONS, BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, STEPWISE_TEST_RESOLUTIONS: record },
    timeout: 30_000,
  });
  return { status: child.status, stdout: child.stdout, resolved: readFileSync(record, 'utf8').trim().split('\n') };
}

const loadsCore = (urls: string[]) => urls.some((url) => /\/core\/dist\//.test(url));

describe('stepwise --version', () => {
  it('prints the package version without loading the commands or core', () => {
    assertBuilt();
    const { version } = JSON.parse(readFileSync(path.join(PACKAGE_DIRECTORY, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-v']) {
      const answered = resolvedBy([flag]);
      expect(answered.status).toBe(0);
      expect(answered.stdout).toBe(`${version}\n`);
      expect(loadsCore(answered.resolved)).toBe(false);
    }
    // The probe sees core where a command needs it.
    const helped = resolvedBy(['--help']);
    expect(helped.stdout).toContain('Usage: stepwise <command>');
    expect(loadsCore(helped.resolved)).toBe(true);
  });
});
