import type { StepError } from '../errors.js';
import type { TokenUsage } from '../journal/events.js';
import type { Artifact } from '../tools/define-tool.js';
import { seededRandom } from './fixtures.js';

/**
 * Draws an integer from `min` to `max` (both included). Property tests pass fast-check's
 * `(min, max) => g(fc.integer, { min, max })` (from `fc.gen()`), so a failure shrinks towards
 * `min`: write every draw so that its `min` is the plainest choice. `seededDraw` needs no library.
 */
export type Draw = (min: number, max: number) => number;

/** A `Draw` from a seed (the same seed gives the same draws). */
export function seededDraw(seed: number): Draw {
  const random = seededRandom(seed);
  return (min, max) => min + Math.floor(random() * (max - min + 1));
}

export const pick = <T>(draw: Draw, items: readonly T[]): T => items[draw(0, items.length - 1)] as T;

/** True with a chance of `percent` in 100 (false, the plainest, when shrunk). */
export const chance = (draw: Draw, percent: number): boolean => draw(0, 99) >= 100 - percent;

const WORDS = ['alpha', 'beta', 'gamma', 'δέλτα', 'échec', '名前', 'tab\there', 'quote"d', 'line\nbreak', '😀'];

/** Text of up to `words` words; now and then long enough (over 4 KB) that stores move it to their blob table. */
export function randomText(draw: Draw, words = 6): string {
  const count = draw(0, words);
  const text = Array.from({ length: count }, () => pick(draw, WORDS)).join(' ');
  return chance(draw, 5) ? text + 'x'.repeat(draw(4100, 5000)) : text;
}

/** Any JSON value (no `-0`, no `undefined`, nothing JSON would change). */
export function randomValue(draw: Draw, depth = 0): unknown {
  switch (draw(0, depth > 2 ? 4 : 6)) {
    case 0:
      return null;
    case 1:
      return randomText(draw);
    case 2:
      return draw(-1000, 1000) || 0;
    case 3:
      return draw(0, 1) === 1;
    case 4:
      return draw(1, 100000) / 1000;
    case 5:
      return Array.from({ length: draw(0, 3) }, () => randomValue(draw, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: draw(0, 3) }, (_, index) => [`key${index}`, randomValue(draw, depth + 1)]),
      );
  }
}

export function randomUsage(draw: Draw): TokenUsage | undefined {
  if (!chance(draw, 70)) return undefined;
  const promptTokens = draw(0, 500);
  const completionTokens = draw(0, 200);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

export function randomError(draw: Draw): StepError {
  return {
    code: pick(draw, ['E300', 'E304', 'E306', 'E307', 'E309', 'E310', 'E401']),
    message: randomText(draw, 4),
    retryable: chance(draw, 50),
    ...(chance(draw, 30) ? { details: { exitCode: draw(1, 3) } } : {}),
  };
}

export function randomArtifacts(draw: Draw): readonly Artifact[] | undefined {
  if (!chance(draw, 30)) return undefined;
  return Array.from({ length: draw(1, 2) }, () => ({
    kind: pick(draw, ['stdout', 'stderr', 'diagnostics']),
    content: randomText(draw),
    ...(chance(draw, 30) ? { name: 'out.txt', mediaType: 'text/plain', truncated: chance(draw, 50) } : {}),
  }));
}
