import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describeJsonSyntaxError, ErrorCodes, StepwiseError } from '@stepwise/core';

/** A plan file as read from disk, before validation. */
export interface PlanFile {
  readonly file: string;
  readonly text: string;
  /** The parsed JSON (not yet validated). */
  readonly value: unknown;
}

/** Reads JSON from a file (relative to `cwd`): E004 (exit 2) with line and column when it is missing or does not parse. */
export async function readJsonFile(file: string, what = 'file', cwd = process.cwd()): Promise<PlanFile> {
  let text: string;
  try {
    text = await readFile(path.resolve(cwd, file), 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new StepwiseError(
      ErrorCodes.INPUT_INVALID,
      code === 'ENOENT' ? `${what} not found: ${file}` : `cannot read ${what} ${file}: ${(error as Error).message}`,
      { location: file },
    );
  }
  try {
    return { file, text, value: JSON.parse(text) };
  } catch (error) {
    const syntax = describeJsonSyntaxError(text, error);
    const where = `${file}:${syntax.line}:${syntax.column}`;
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `${where} is not valid JSON: ${syntax.message}`, {
      location: where,
      details: { file, line: syntax.line, column: syntax.column },
    });
  }
}
