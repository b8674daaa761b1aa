import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWorkspace, FIXTURES, PACKAGE_DIRECTORY, parseJsonLines, runCli, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

/** The README's quick-start plan, as a reader copies it (it opens with a `//` comment). */
async function readmePlan(): Promise<string> {
  const readme = await readFile(path.join(PACKAGE_DIRECTORY, 'README.md'), 'utf8');
  const block = /```jsonc\n(\/\/ plan\.json[\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('the README has no ```jsonc block starting with "// plan.json"');
  return block;
}

describe('JSONC plan files', () => {
  it("validates and runs the README's plan.json as written", async () => {
    await cli.write('readme-plan.json', await readmePlan());
    const validated = await cli.stepwise(['validate', 'readme-plan.json']);
    expect(validated.stderr).toBe('');
    expect(validated.code).toBe(0);
    expect(validated.stdout).toContain('✓ readme-plan.json is a valid plan for the dag engine: 2 steps (read → copy)');
    const ran = await cli.stepwise(['run', 'readme-plan.json', '--json']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(await readFile(path.join(cli.directory, 'out', 'package.json'), 'utf8')).toBe(
      await readFile(path.join(cli.directory, 'package.json'), 'utf8'),
    );
  });

  it('runs a plan with comments and trailing commas under a JSONC configuration', async () => {
    const project = await createWorkspace();
    try {
      // Without this configuration the exec step would be denied (no TTY): it must be read.
      await project.write(
        'stepwise.config.json',
        [
          '// stepwise.config.json',
          '{',
          '  "approvals": { "exec": "auto", }, /* the deploy step runs unattended */',
          `  "plugins": [${JSON.stringify({ module: path.join(FIXTURES, 'test-plugin.mjs') })},],`,
          '}',
          '',
        ].join('\n'),
      );
      await project.write(
        'plan.jsonc',
        [
          '/* A plan an LLM wrote, then a person annotated. */',
          '{',
          '  "id": "annotated",',
          '  "steps": [',
          '    { "id": "read", "tool": "file_read", "args": { "path": "README.md", }, }, // trailing commas',
          '    {',
          '      "id": "deploy",',
          '      "tool": "deploy",',
          '      "dependsOn": ["read",],',
          '      "args": { "target": "staging" },',
          '    },',
          '  ],',
          '}',
          '',
        ].join('\n'),
      );
      const outcome = await runCli(['run', 'plan.jsonc', '--json'], { cwd: project.directory });
      expect(outcome.code, outcome.stderr).toBe(0);
      const ends = parseJsonLines(outcome.stdout).filter((event) => event.type === 'step-end');
      expect(ends.map((event) => [event.stepId, (event.result as { status: string }).status])).toEqual([
        ['read', 'succeeded'],
        ['deploy', 'succeeded'],
      ]);
    } finally {
      await project.dispose();
    }
  });

  it('still locates a syntax error after comments, in plans and in configurations (E004)', async () => {
    await cli.write(
      'broken.jsonc',
      '// c\n{\n  "id": "p", // x\n  "steps": [\n    { "id": "a" "tool": "file_read" }\n  ]\n}\n',
    );
    const plan = await cli.stepwise(['run', 'broken.jsonc']);
    expect(plan.code).toBe(2);
    expect(plan.stderr.trim()).toBe('stepwise run: E004 broken.jsonc:5:17 is not valid JSON: comma expected');
    const project = await createWorkspace();
    try {
      const config = await project.write('stepwise.config.json', '{\n  // engine\n  "engine": "dag",,\n}\n');
      await project.write('plan.json', { id: 'p', steps: [{ id: 'a', tool: 'file_read', args: { path: 'x' } }] });
      const outcome = await runCli(['validate', 'plan.json'], { cwd: project.directory });
      expect(outcome.code).toBe(2);
      expect(outcome.stderr.trim()).toMatch(
        new RegExp(
          `^stepwise validate: E004 ${config.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:3:19 is not valid JSON: `,
        ),
      );
    } finally {
      await project.dispose();
    }
  });
});
