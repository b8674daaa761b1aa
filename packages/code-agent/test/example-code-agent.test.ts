import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The example runs the built packages in a child process, as a user's script would.
const example = fileURLToPath(new URL('../../../examples/code-agent/', import.meta.url));

describe('examples/code-agent', () => {
  it('runs end to end through the fake OpenAI-compatible server and npm test', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'code-agent-example-'));
    try {
      const workspaceDir = path.join(dir, 'project');
      const env = { ...process.env };
      delete env.STEPWISE_MODEL_URL;
      const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn(process.execPath, [path.join(example, 'run.mjs'), '--workspace', workspaceDir], {
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let text = '';
        child.stdout.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        child.stderr.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        child.on('exit', (exitCode) => resolve({ code: exitCode, output: text }));
      });
      expect(output).toMatch(
        /fix-discount attempt 1: changed src\/cart.js; npm test failed \(exit 1\); failing: .*half price.*; rolled back/,
      );
      expect(output).toMatch(/fix-discount attempt 2: changed src\/cart.js; npm test passed/);
      expect(output).toContain('Solved:');
      expect(code).toBe(0);
      expect(readFileSync(path.join(workspaceDir, 'src/cart.js'), 'utf8')).toContain('(1 - percent / 100)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
