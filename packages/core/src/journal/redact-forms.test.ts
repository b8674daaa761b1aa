import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory-store.js';
import { RunJournal } from './journal.js';
import { createRedactor, REDACTED, secretForms } from './redact.js';
import { readAll } from './run-store.js';

const SECRET = 'Zq7-hunter2+Secret/42x';
const redactor = createRedactor({ secrets: [SECRET] });

function base64At(offset: number, prefix = 'abcdef'.slice(0, offset)): string {
  return Buffer.from(`${prefix}${SECRET} and then more text`).toString('base64');
}

/** Every way the secret could still be in `text`: the forms the redactor promises to remove. */
function leaks(text: string): string[] {
  const lower = text.toLowerCase();
  return secretForms(SECRET).filter((form) => lower.includes(form.toLowerCase()));
}

describe('redaction of encoded forms', () => {
  const cases: [string, string][] = [
    ['plain', `value ${SECRET} end`],
    ['upper case', `VALUE ${SECRET.toUpperCase()} END`],
    ['lower case', `value ${SECRET.toLowerCase()} end`],
    ['hex', `hex ${Buffer.from(SECRET).toString('hex')} end`],
    ['HEX', `hex ${Buffer.from(SECRET).toString('hex').toUpperCase()} end`],
    ['base64 at offset 0', base64At(0)],
    ['base64 at offset 1', base64At(1)],
    ['base64 at offset 2', base64At(2)],
    ['base64 at offset 3', base64At(3)],
    ['base64 alone, padded', Buffer.from(SECRET).toString('base64')],
    ['base64url', Buffer.from(`xy${SECRET}`).toString('base64url')],
    ['percent-encoded', `https://example.com/?key=${encodeURIComponent(SECRET)}&x=1`],
    ['percent-encoded, lower-case escapes', `key=${encodeURIComponent(SECRET).toLowerCase()}`],
    ['form-encoded', new URLSearchParams({ key: SECRET }).toString()],
    ['JSON-escaped', JSON.stringify({ nested: JSON.stringify({ key: SECRET }) })],
  ];
  it.each(cases)('removes the %s form', (_name, text) => {
    expect(leaks(text).length).toBeGreaterThan(0);
    const out = redactor.redactText(text);
    expect(out).toContain(REDACTED);
    expect(leaks(out)).toEqual([]);
    if (!text.startsWith('VALUE')) expect(out).not.toContain(Buffer.from(SECRET).toString('base64').slice(4, 16));
  });

  it('leaves text without the secret alone', () => {
    const text = 'the quick brown fox jumps over the lazy dog 0123456789abcdef';
    expect(redactor.redactText(text)).toBe(text);
    const value = { list: [text], nested: { url: 'https://example.com/a' } };
    expect(redactor.redact(value)).toBe(value);
  });

  it('removes every-byte percent-encoding in upper and lower case, and any mix of encoded bytes', () => {
    const upper = [...Buffer.from(SECRET)]
      .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
      .join('');
    const mixed = [...SECRET]
      .map((char, index) => (index % 2 ? encodeURIComponent(char) : `%${char.charCodeAt(0).toString(16)}`))
      .join('');
    // Wrapped every 10 columns: line breaks fall inside escapes too.
    const wrapped = upper.replace(/(.{10})/g, '$1\r\n');
    for (const text of [upper, upper.toLowerCase(), mixed, `a=${upper}&b=1`, wrapped]) {
      const out = redactor.redactText(text);
      expect(out).toContain(REDACTED);
      expect(decodeURIComponent(out.replace(/\r\n/g, ''))).not.toContain(SECRET);
    }
    expect(redactor.redactText(`a=${upper}&b=1`)).toBe(`a=${REDACTED}&b=1`);
  });

  it('removes the secret split by line breaks (LF, CRLF, JSON-escaped) at every position', () => {
    for (let at = 1; at < SECRET.length; at++) {
      for (const separator of ['\n', '\r\n', '\\n', '\\r\\n', '\n\n']) {
        const text = `before ${SECRET.slice(0, at)}${separator}${SECRET.slice(at)} after`;
        expect({ at, separator, out: redactor.redactText(text) }).toEqual({
          at,
          separator,
          out: `before ${REDACTED} after`,
        });
      }
    }
  });

  it('removes base64 wrapped at 64 or 76 columns (PEM, MIME) and hex wrapped over lines', () => {
    for (const width of [64, 76]) {
      for (const prefix of ['', 'x', 'xy', 'header: '.repeat(9)]) {
        const encoded = Buffer.from(`${prefix}${SECRET} and some more text after it to wrap`).toString('base64');
        for (const newline of ['\n', '\r\n']) {
          const wrapped = encoded.replace(new RegExp(`(.{${width}})`, 'g'), `$1${newline}`);
          const out = redactor.redactText(wrapped);
          expect(out).toContain(REDACTED);
          expect(leaks(out.replace(/\r?\n/g, ''))).toEqual([]);
        }
      }
    }
    const hex = Buffer.from(SECRET)
      .toString('hex')
      .replace(/(.{16})/g, '$1\n');
    expect(redactor.redactText(hex)).toBe(REDACTED);
  });

  it('removes the UTF-8 bytes of a secret read as Latin-1', () => {
    const accented = createRedactor({ secrets: ['pässwört-42'] });
    const mojibake = Buffer.from('pässwört-42').toString('latin1');
    expect(accented.redactText(`x ${mojibake} y`)).toBe(`x ${REDACTED} y`);
    expect(accented.redactText(`x ${encodeURIComponent('pässwört-42')} y`)).toBe(`x ${REDACTED} y`);
  });

  it('leaves text that only looks disguised alone', () => {
    const text = 'progress 50%\nline two %zz and 100%25\r\nC:\\new';
    expect(redactor.redactText(text)).toBe(text);
  });
});

/**
 * What the redactor cannot catch, each shown here so a change in it is noticed (and the README's list
 * of limits kept true). None of these is a form a tool writes by accident.
 */
describe('documented limits of redaction', () => {
  const unchanged = (text: string) => expect(redactor.redactText(text)).toBe(text);

  it('does not find a secret cut into fragments by anything but line breaks', () => {
    unchanged(`${SECRET.slice(0, 9)} ${SECRET.slice(9)}`);
    unchanged(`${SECRET.slice(0, 9)}\t${SECRET.slice(9)}`);
    unchanged([...SECRET].join(' '));
    unchanged(JSON.stringify([SECRET.slice(0, 9), SECRET.slice(9)]));
  });

  it('does not find a transformed, encrypted, compressed or twice-encoded secret', () => {
    unchanged([...SECRET].reverse().join(''));
    unchanged(Buffer.from(Buffer.from(SECRET).map((byte) => byte ^ 0x5a)).toString('hex'));
    unchanged(deflateSync(Buffer.from(SECRET)).toString('base64'));
    unchanged(encodeURIComponent(encodeURIComponent(SECRET)).replace(/%/g, '%25'));
    unchanged(Buffer.from(Buffer.from(SECRET).toString('base64')).toString('base64'));
    unchanged(Buffer.from(SECRET, 'utf16le').toString('base64'));
  });

  it('does not treat values shorter than six characters as secrets', () => {
    const short = createRedactor({ secrets: ['abc12'] });
    expect(short.redactText('key abc12')).toBe('key abc12');
  });

  it('does not find base64 of a secret under eight bytes at every alignment', () => {
    const seven = createRedactor({ secrets: ['Q7x-p9z'] });
    expect(seven.redactText(Buffer.from('Q7x-p9z').toString('base64'))).toBe(REDACTED);
    const shifted = Buffer.from('xQ7x-p9z!').toString('base64');
    expect(seven.redactText(shifted)).toBe(shifted);
  });

  it('finds built-in token formats only whole: a token split over lines is not found', () => {
    const split = 'AKIAIOSFOD\nNN7EXAMPLE';
    expect(createRedactor().redactText(split)).toBe(split);
  });
});

describe('redaction of shapes', () => {
  class Holder {
    constructor(
      readonly credential: string,
      readonly note: string,
    ) {}
  }

  it('redacts a class instance through its JSON form', () => {
    const out = redactor.redact({ value: new Holder('x', `note ${SECRET}`) });
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(JSON.stringify(out)).toContain(REDACTED);
  });

  it('redacts a URL with the secret as its password', () => {
    const url = new URL(`https://user:${encodeURIComponent(SECRET)}@example.com/path`);
    const out = redactor.redact({ url });
    expect(JSON.stringify(out)).not.toContain(encodeURIComponent(SECRET));
    expect(leaks(JSON.stringify(out))).toEqual([]);
  });

  it('redacts a Buffer holding the secret and keeps it a Buffer', () => {
    const out = redactor.redact({ data: Buffer.from(`bytes ${SECRET}`) });
    expect(Buffer.isBuffer(out.data)).toBe(true);
    expect(out.data.toString()).toBe(`bytes ${REDACTED}`);
    expect(JSON.stringify(out)).not.toContain(JSON.stringify([...Buffer.from(SECRET)]).slice(1, -1));
  });

  it('redacts object keys', () => {
    const out = redactor.redact({ args: { [SECRET]: 'value', [`prefix-${SECRET}`]: { inner: 1 } } });
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(Object.keys(out.args)).toEqual([REDACTED, `prefix-${REDACTED}`]);
  });

  it('keeps an unchanged instance by reference', () => {
    const date = new Date(0);
    const url = new URL('https://example.com/');
    expect(redactor.redact({ date, url }).date).toBe(date);
  });

  it('redacts error details as well as the message', () => {
    const error = Object.assign(new Error(`failed with ${SECRET}`), { code: 'E300', details: { stdout: SECRET } });
    const out = redactor.redact(error) as Error & { code: string; details: unknown };
    expect(out.message).toBe(`failed with ${REDACTED}`);
    expect(out.code).toBe('E300');
    expect(JSON.stringify(out.details)).not.toContain(SECRET);
  });
});

describe('journal redaction of step ids and argument keys', () => {
  it('stores neither, and the fold still pairs the events of the step', async () => {
    const store = new MemoryStore();
    const journal = new RunJournal({
      runId: 'run_ids',
      store,
      redactor: createRedactor({ secrets: ['hunter2-step'] }),
    });
    journal.emit({ type: 'step-start', stepId: 'deploy-hunter2-step', tool: 'x', attempt: 1, executionId: 'ex_1' });
    journal.emit({
      type: 'tool-call',
      stepId: 'deploy-hunter2-step',
      executionId: 'ex_1',
      attempt: 1,
      tool: 'x',
      effect: 'read',
      idempotent: true,
      args: { 'hunter2-step': 1 },
    });
    await journal.flush();
    const events = await readAll(store, 'run_ids');
    expect(JSON.stringify(events)).not.toContain('hunter2-step');
    expect(events.map((event) => (event as { stepId?: string }).stepId)).toEqual([
      `deploy-${REDACTED}`,
      `deploy-${REDACTED}`,
    ]);
  });
});
