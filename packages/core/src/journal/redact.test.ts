import { describe, expect, it } from 'vitest';
import { createRedactor, REDACTED, redact } from './redact.js';

const samples: [string, string][] = [
  ['aws access key', 'key AKIAIOSFODNN7EXAMPLE here'],
  ['github token', `token ghp_${'x'.repeat(36)}`],
  ['github fine-grained', `github_pat_${'A1'.repeat(20)}`],
  ['openai key', 'OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz0123'],
  ['anthropic key', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz'],
  ['slack', 'xoxb-1234567890-abcdefghij'],
  ['jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
  ['pem', '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----'],
  ['bearer header', 'Authorization: Bearer abcdef123456789'],
  ['password pair', 'password=hunter22'],
  ['secret colon', 'client_secret: "s3cr3t-value"'],
  ['url credentials', 'https://user:pa55word@example.com/repo.git'],
];

describe('redact', () => {
  it.each(samples)('removes %s', (_name, text) => {
    const secretPart = text.match(
      /(AKIA\w+|ghp_\w+|github_pat_\w+|sk-[\w-]+|xoxb-[\w-]+|eyJ[\w.-]+|MIIEowIBAAKCAQEA|abcdef123456789|hunter22|s3cr3t-value|pa55word)/,
    )?.[0];
    expect(secretPart).toBeDefined();
    const out = redact(text);
    expect(out).not.toContain(secretPart);
    expect(out).toContain(REDACTED);
  });

  it('keeps ordinary text, numbers and short values untouched (same reference)', () => {
    const value = { path: 'src/index.ts', count: 3, tokens: 120, nested: [{ text: 'the password rule' }] };
    expect(redact(value)).toBe(value);
  });

  it('redacts values of secret-named keys and host-marked secrets anywhere', () => {
    process.env.STEPWISE_TEST_SECRET = 'value-from-env-123';
    const redactor = createRedactor({ secrets: ['my-db-pass-9'], secretEnv: ['STEPWISE_TEST_SECRET'] });
    const input = {
      apiKey: 'short',
      headers: { authorization: 'xyz' },
      note: 'connect with my-db-pass-9 then value-from-env-123',
      list: ['my-db-pass-9'],
      error: new Error('failed: my-db-pass-9'),
    };
    const out = redactor.redact(input);
    expect(out.apiKey).toBe(REDACTED);
    expect(out.headers.authorization).toBe(REDACTED);
    expect(JSON.stringify(out)).not.toMatch(/my-db-pass-9|value-from-env-123/);
    expect((out.error as Error).message).toBe(`failed: ${REDACTED}`);
    expect(input.note).toContain('my-db-pass-9');
  });

  it('survives cycles', () => {
    const cyclic: Record<string, unknown> = { secret: 'abcdefgh' };
    cyclic.self = cyclic;
    expect((redact(cyclic) as Record<string, unknown>).secret).toBe(REDACTED);
  });
});
