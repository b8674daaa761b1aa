import { describe, expect, it } from 'vitest';
import { createJsonLocator, describeJsonSyntaxError, findJsonSyntaxError, positionAt } from './json-error-location.js';

const plan = `{
  "id": "p",
  "steps": [
    { "id": "a", "tool": "echo" },
    {
      "id": "b/c",
      "tool": "echo",
      "args": { "list": [1, 2, { "deep": true }] }
    }
  ]
}`;

describe('findJsonSyntaxError', () => {
  it.each([
    ['{\n  "a": 1\n  "b": 2\n}', 3, 3, 'comma expected'],
    ['{\n  "a": 1,\n}', 3, 1, 'property name expected'],
    ['[1, 2', 1, 6, 'close bracket expected'],
    ['{\n  "a": tru\n}', 2, 8, 'invalid symbol'],
    ['{ "a": 1 } // note', 1, 12, 'invalid comment token'],
    ['', 1, 1, 'value expected'],
  ])('locates the first error in %j', (text, line, column, message) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(findJsonSyntaxError(text)).toMatchObject({ line, column, message });
  });

  it('finds nothing in valid JSON', () => {
    expect(findJsonSyntaxError(plan)).toBeUndefined();
  });

  it("keeps V8's message where the parsers disagree", () => {
    expect(describeJsonSyntaxError('', new SyntaxError('boom'))).toMatchObject({ line: 1, column: 1 });
  });
});

describe('createJsonLocator', () => {
  const locate = createJsonLocator(plan);

  it('locates members at their key and items at their value', () => {
    expect(locate('')).toEqual({ line: 1, column: 1 });
    expect(locate('/steps')).toEqual({ line: 3, column: 3 });
    expect(locate('/steps/0')).toEqual({ line: 4, column: 5 });
    expect(locate('/steps/0/tool')).toEqual({ line: 4, column: 18 });
    expect(locate('/steps/1/args/list/2/deep')).toEqual({ line: 8, column: 34 });
  });

  it('falls back to the nearest existing ancestor', () => {
    expect(locate('/steps/1/args/missing')).toEqual({ line: 8, column: 7 });
    expect(locate('/steps/9')).toEqual({ line: 3, column: 3 });
  });

  it('decodes escaped pointer tokens', () => {
    const text = '{"a/b": {"c~d": 1}}';
    expect(createJsonLocator(text)('/a~1b/c~0d')).toEqual({ line: 1, column: 10 });
  });

  it('locates nothing in text that does not parse at all', () => {
    expect(createJsonLocator('')('/a')).toBeUndefined();
  });
});

describe('positionAt', () => {
  it('counts lines and columns from 1', () => {
    expect(positionAt('ab\ncd\n', 0)).toEqual({ line: 1, column: 1 });
    expect(positionAt('ab\ncd\n', 4)).toEqual({ line: 2, column: 2 });
    expect(positionAt('ab\ncd\n', 6)).toEqual({ line: 3, column: 1 });
  });
});

describe('text nested deeper than the parser can walk', () => {
  const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

  it('locates nothing instead of throwing a RangeError', () => {
    const text = deep(100_000);
    expect(JSON.parse(text)).toBeTypeOf('object');
    expect(createJsonLocator(text)('/a/a')).toBeUndefined();
    expect(findJsonSyntaxError(text)).toBeUndefined();
    expect(describeJsonSyntaxError(`${text}x`, new SyntaxError('Unexpected token x'))).toMatchObject({
      line: 1,
      column: 1,
      message: 'Unexpected token x',
    });
  });

  it('still locates in a text it can walk', () => {
    expect(createJsonLocator(deep(100))('/a/a')).toEqual({ line: 1, column: 7 });
  });
});
