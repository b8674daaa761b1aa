import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { parseJsonFile } from './parse-json-file.js';

/** A plan file as read from disk, before validation. */
export interface PlanFile {
  readonly file: string;
  /**
   * The file's text as strict JSON (comments and trailing commas blanked out, everything else at
   * its offset), for locating problems by line and column.
   */
  readonly text: string;
  /** The parsed JSON (not yet validated). */
  readonly value: unknown;
}

/**
 * Reads a JSON file (relative to `cwd`) a person may have written: comments and trailing commas are
 * allowed (JSONC). E004 (exit 2) when it is missing, or with line and column when it does not parse.
 */
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
  const { value, json } = parseJsonFile(text, file);
  return { file, text: json, value };
}
