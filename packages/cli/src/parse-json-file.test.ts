import { createJsonLocator, ErrorCodes, StepwiseError } from '@stepwise/core';
import { describe, expect, it } from 'vitest';
import { parseJsonFile } from './parse-json-file.js';

function parseError(text: string): StepwiseError {
  try {
    parseJsonFile(text, 'plan.json');
  } catch (error) {
    if (StepwiseError.isInstance(error)) return error;
    throw error;
  }
  throw new Error(`parsed: ${text}`);
}

describe('parseJsonFile', () => {
  it('reads comments and trailing commas (JSONC) and leaves strings alone', () => {
    const text = [
      '// a plan, as an LLM wrote it',
      '{',
      '  "id": "p", /* inline */',
      '  "url": "http://example.com//not-a-comment/*nor-this*/",',
      '  /* a block',
      '     over two lines */',
      '  "steps": [',
      '    { "id": "a", "args": { "list": [1, 2, [3,],], }, },',
      '  ],',
      '}',
      '',
    ].join('\n');
    const { value, json } = parseJsonFile(text, 'plan.json');
    expect(value).toEqual({
      id: 'p',
      url: 'http://example.com//not-a-comment/*nor-this*/',
      steps: [{ id: 'a', args: { list: [1, 2, [3]] } }],
    });
    // Every character but the blanked ones stays put, so positions in `json` are the file's.
    expect(json).toHaveLength(text.length);
    expect(json.split('\n')).toHaveLength(text.split('\n').length);
    expect(JSON.parse(json)).toEqual(value);
    expect(createJsonLocator(json)('/steps/0/args/list')).toEqual({ line: 8, column: 28 });
  });

  it('reports a syntax error after comments at its line and column, as E004', () => {
    const error = parseError('// c\n{\n  "id": "p", // x\n  "steps": [\n    { "id": "a" "tool": "t" }\n  ]\n}\n');
    expect(error.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(error.message).toBe('plan.json:5:17 is not valid JSON: comma expected');
    expect(error.location).toBe('plan.json:5:17');
    expect(error.details).toEqual({ file: 'plan.json', line: 5, column: 17 });
  });

  it('still refuses commas that trail nothing, and doubled commas', () => {
    expect(parseError('[,]').message).toBe('plan.json:1:2 is not valid JSON: value expected');
    expect(parseError('{ "a": 1,, }').message).toMatch(/^plan\.json:1:10 is not valid JSON: /);
    expect(parseError('{ , "a": 1 }').message).toMatch(/^plan\.json:1:3 is not valid JSON: /);
  });

  it('says where a comment that is never closed starts', () => {
    expect(parseError('{\n  "id": "p", /* never closed\n  "steps": []\n}\n').message).toBe(
      'plan.json:2:14 is not valid JSON: comment not closed (*/ expected)',
    );
  });

  it('keeps JSON.parse semantics: an own __proto__ key stays a key', () => {
    const { value } = parseJsonFile('{ "__proto__": { "polluted": true }, // c\n }', 'plan.json');
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value as object)).toEqual(['__proto__']);
    expect((value as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('accepts a byte order mark and refuses an empty file', () => {
    expect(parseJsonFile('\uFEFF{ "id": "p" }', 'plan.json').value).toEqual({ id: 'p' });
    expect(parseError('  // only a comment\n').code).toBe(ErrorCodes.INPUT_INVALID);
  });
});
