import { stripVTControlCharacters } from 'node:util';
import cliTruncate from 'cli-truncate';
import stringWidth from 'string-width';

/** What a command writes to and reads from; the real process streams, or fakes in tests. */
export interface CommandIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

export function processIo(): CommandIo {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() };
}

export type Paint = (text: string) => string;

export interface Palette {
  readonly enabled: boolean;
  readonly bold: Paint;
  readonly dim: Paint;
  readonly red: Paint;
  readonly green: Paint;
  readonly yellow: Paint;
  readonly blue: Paint;
  readonly magenta: Paint;
  readonly cyan: Paint;
  readonly gray: Paint;
  readonly inverse: Paint;
}

const paint =
  (open: number, close: number): Paint =>
  (text) =>
    `\u001b[${open}m${text}\u001b[${close}m`;
const plain: Paint = (text) => text;

/** ANSI colours, or none. `NO_COLOR` (any value) turns them off, `FORCE_COLOR` on. */
export function createPalette(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): Palette {
  const enabled =
    env.NO_COLOR === undefined && (env.FORCE_COLOR !== undefined ? env.FORCE_COLOR !== '0' : stream.isTTY === true);
  if (!enabled) {
    return {
      enabled,
      bold: plain,
      dim: plain,
      red: plain,
      green: plain,
      yellow: plain,
      blue: plain,
      magenta: plain,
      cyan: plain,
      gray: plain,
      inverse: plain,
    };
  }
  return {
    enabled,
    bold: paint(1, 22),
    dim: paint(2, 22),
    red: paint(31, 39),
    green: paint(32, 39),
    yellow: paint(33, 39),
    blue: paint(34, 39),
    magenta: paint(35, 39),
    cyan: paint(36, 39),
    gray: paint(90, 39),
    inverse: paint(7, 27),
  };
}

/** `text` without its escape sequences (colours, hyperlinks, cursor movement). */
export function stripAnsi(text: string): string {
  return stripVTControlCharacters(text);
}

/**
 * The columns `text` takes on a terminal: East Asian wide characters and emoji (ZWJ sequences and
 * variation selectors included) take two, combining marks and escape sequences none.
 */
export function textWidth(text: string): number {
  return stringWidth(text);
}

/** Cuts `text` to at most `width` columns with an ellipsis, keeping escapes intact (and closing them). */
export function fitWidth(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  // cli-truncate 5 keeps a wide character that straddles the cut whole, one column past `width`;
  // cutting one column earlier then leaves the character out.
  for (let columns = width; columns > 0; columns -= 1) {
    const cut = cliTruncate(text, columns);
    if (stringWidth(cut) <= width) return cut;
  }
  return '';
}

/** `text` followed by spaces up to `width` columns; wider text is left as it is. */
export function padEnd(text: string, width: number): string {
  const length = stringWidth(text);
  return length >= width ? text : text + ' '.repeat(width - length);
}

/**
 * Rows of cells as lines whose columns line up: each column as wide as its widest visible cell
 * (escapes not counted); the last column is not padded. Columns separated by two spaces.
 */
export function alignColumns(rows: readonly (readonly string[])[], indent = ''): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, column) => {
      widths[column] = Math.max(widths[column] ?? 0, stringWidth(cell));
    });
  }
  return rows.map(
    (row) =>
      indent +
      row
        .map((cell, column) => (column === row.length - 1 ? cell : padEnd(cell, widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
  );
}

/** Writes, ignoring EPIPE (`stepwise run --json | head`). */
export function writeSafely(stream: NodeJS.WritableStream, text: string): void {
  try {
    stream.write(text);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPIPE') throw error;
  }
}
