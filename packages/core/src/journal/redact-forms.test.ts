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

  it('documents its limit: a secret split across lines or otherwise transformed is not found', () => {
    const split = `${SECRET.slice(0, 9)}\n${SECRET.slice(9)}`;
    expect(redactor.redactText(split)).toBe(split);
    const reversed = [...SECRET].reverse().join('');
    expect(redactor.redactText(reversed)).toBe(reversed);
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
