import { describe, expect, it } from 'vitest';
import { effectOf, inputSchemaOf, stepwiseToolName } from './mcp-tool.js';

const tool = (annotations?: Record<string, boolean>) => ({ name: 't', inputSchema: { type: 'object' }, annotations });

describe('effectOf', () => {
  it('follows the annotations, and the host override wins', () => {
    expect(effectOf(tool({ readOnlyHint: true }))).toBe('read');
    expect(effectOf(tool({ readOnlyHint: true, destructiveHint: true }))).toBe('read');
    expect(effectOf(tool({ destructiveHint: true }))).toBe('destructive');
    expect(effectOf(tool({ destructiveHint: false }))).toBe('write');
    expect(effectOf(tool())).toBe('write');
    expect(effectOf(tool({ readOnlyHint: true }), 'network')).toBe('network');
  });
});

describe('stepwiseToolName', () => {
  it('keeps valid names and replaces what Stepwise does not allow', () => {
    expect(stepwiseToolName('read_file')).toBe('read_file');
    expect(stepwiseToolName('git.log-v2')).toBe('git.log-v2');
    expect(stepwiseToolName('odd name!')).toBe('odd_name_');
    expect(stepwiseToolName('3d/render')).toBe('_3d_render');
    expect(stepwiseToolName('x'.repeat(200))).toHaveLength(128);
  });
});

describe('inputSchemaOf', () => {
  it('drops $schema and $id, and falls back to any object when ajv cannot compile the schema', () => {
    const warnings: string[] = [];
    expect(
      inputSchemaOf({ name: 't', inputSchema: { $schema: 'x', $id: 'y', type: 'object' } }, (m) => warnings.push(m)),
    ).toEqual({ type: 'object' });
    expect(
      inputSchemaOf({ name: 'broken', inputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } } }, (m) =>
        warnings.push(m),
      ),
    ).toEqual({ type: 'object' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('broken');
  });
});
