import { describe, expect, it } from 'vitest';
import { createRedactor } from './redact.js';
import { StreamRedactor } from './stream-redactor.js';

const SECRET = 'hunter2-very-secret-value-0042';
const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEAvbBnkP2nW0bBqsg1xrZRm6k0c0t4QdAqZ2tq6Qk0P2hZ',
  'c2VjcmV0LWJvZHktbGluZS10d28tb2YtdGhlLWtleS1tYXRlcmlhbC1oZXJl',
  '-----END RSA PRIVATE KEY-----',
].join('\n');

/** Feeds `pieces` at the given times and collects everything released, then the final release. */
function stream(pieces: readonly (readonly [number, string])[], options = {}): string[] {
  const redactor = createRedactor({ secrets: [SECRET] });
  const live = new StreamRedactor((text) => redactor.redactText(text), options);
  const shown: string[] = [];
  let now = 0;
  for (const [at, text] of pieces) {
    // Ticks between writes, as the live channel's timer does.
    for (; now < at; now += 50) shown.push(live.take(now));
    live.write(text, at);
    shown.push(live.take(at));
  }
  shown.push(live.take(now + 10_000, true));
  return shown.filter((text) => text.length > 0);
}

describe('StreamRedactor (trying to get a secret through in pieces)', () => {
  it('catches a secret split between two writes of one line', () => {
    const half = SECRET.length / 2;
    const shown = stream([
      [0, `token is ${SECRET.slice(0, half)}`],
      [10, `${SECRET.slice(half)} ok\nnext line\n`],
    ]);
    const all = shown.join('');
    expect(all).not.toContain(SECRET.slice(0, 8));
    expect(all).toContain('token is [REDACTED] ok\nnext line\n');
  });

  it('catches a secret wrapped over two lines, each released as it ends', () => {
    const shown = stream([
      [0, `key: ${SECRET.slice(0, 12)}\n`],
      [30, `${SECRET.slice(12)}\n`],
      [60, 'after\n'],
    ]);
    expect(shown.join('')).not.toContain(SECRET.slice(0, 12));
    expect(shown.join('')).not.toContain(SECRET.slice(12));
  });

  it('keeps a PEM key printed line by line with pauses out of every piece', () => {
    const lines = PEM.split('\n');
    const shown = stream(lines.map((line, index) => [index * 400, `${line}\n`] as const));
    expect(shown.length).toBeGreaterThan(1);
    for (const line of lines.slice(1, 3)) expect(shown.join('')).not.toContain(line.slice(0, 20));
  });

  it('releases whole lines while a stream is busy and everything once it is quiet', () => {
    const redactor = createRedactor();
    const live = new StreamRedactor((text) => redactor.redactText(text), { quietMs: 250 });
    live.write('one\ntwo\nthr', 0);
    expect(live.take(10)).toBe('one\n');
    expect(live.take(100)).toBe('');
    expect(live.take(260)).toBe('two\nthr');
    expect(live.holding).toBe(false);
  });

  it('cuts a line longer than it may hold, but not through a secret', () => {
    const filler = 'x'.repeat(100);
    const long = `${filler}${SECRET}${filler}`.repeat(40);
    const shown = stream(
      Array.from({ length: 40 }, (_, index) => [index, long.slice(index * 100, index * 100 + 100)] as const).concat([
        [50, long.slice(4000)],
      ]),
      { maxHeld: 512 },
    );
    expect(shown.length).toBeGreaterThan(2);
    for (const piece of shown) expect(piece).not.toMatch(/hunter2|0042/);
    expect(shown.join('').split('[REDACTED]').length - 1).toBe(40);
  });

  it('redacts a line that completes a pattern begun in text already shown', () => {
    const shown = stream([
      [0, 'password='],
      [400, 'abcdefgh\n'],
    ]);
    expect(shown.join('')).not.toContain('abcdefgh');
  });
});
