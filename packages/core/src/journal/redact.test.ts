import { describe, expect, it } from 'vitest';
import { StepwiseError } from '../errors.js';
import { createRedactor, MAX_REDACTION_DEPTH, REDACTED, redact } from './redact.js';

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

describe('the pwd pattern', () => {
  it('leaves the working directory a shell exports as PWD and OLDPWD alone', () => {
    for (const text of [
      'PWD=/home/user/project',
      'OLDPWD=/home/user',
      'pwd: /tmp/x',
      'PWD=~/work',
      'PWD=C:\\Users\\me',
      'export OLDPWD=notapath-but-old',
      'env: {"PWD":"/srv/app","HOME":"/root"}',
    ]) {
      expect(redact(text)).toBe(text);
    }
  });

  it('still redacts passwords, under every name that means one', () => {
    for (const [text, secret] of [
      ['PASSWORD=hunter22', 'hunter22'],
      ['DB_PASSWD=hunter22', 'hunter22'],
      ['PASSWD: hunter22', 'hunter22'],
      ['Server=db;UID=sa;PWD=hunter22;', 'hunter22'],
      ['db_pwd = "hunter22"', 'hunter22'],
      ['MYSQL_PWD=hunter22', 'hunter22'],
    ] as const) {
      const out = redact(text);
      expect({ text, out: out.includes(secret) }).toEqual({ text, out: false });
      expect(out).toContain(REDACTED);
    }
  });

  it('treats an environment object the same way: PWD kept, PASSWORD redacted', () => {
    const env = { PWD: '/home/user', OLDPWD: '/home', PASSWORD: 'hunter22', DB_PASSWD: 'hunter22' };
    expect(redact(env)).toEqual({ PWD: '/home/user', OLDPWD: '/home', PASSWORD: REDACTED, DB_PASSWD: REDACTED });
  });
});

describe('values too deep to walk', () => {
  const nested = (depth: number, leaf: unknown = 'leaf my-db-pass-9'): unknown => {
    let value = leaf;
    for (let level = 0; level < depth; level++) value = level % 2 ? [value] : { [`k${level % 3}`]: value };
    return value;
  };

  it.each([5_000, 100_000])('refuses a value %i levels deep with a typed, located error (no RangeError)', (depth) => {
    const redactor = createRedactor({ secrets: ['my-db-pass-9'] });
    let thrown: unknown;
    try {
      redactor.redact({ output: nested(depth) });
    } catch (error) {
      thrown = error;
    }
    expect(StepwiseError.isInstance(thrown)).toBe(true);
    expect(thrown).toMatchObject({ code: 'E004' });
    expect((thrown as StepwiseError).location).toMatch(/^\/output(?:\/k\d\/0|\/0\/k\d)+/);
    expect((thrown as StepwiseError).location?.split('/').length).toBe(MAX_REDACTION_DEPTH + 1);
  });

  it('walks a value at the limit, and redacts the secret at its bottom', () => {
    const redactor = createRedactor({ secrets: ['my-db-pass-9'] });
    const out = redactor.redact(nested(MAX_REDACTION_DEPTH));
    expect(JSON.stringify(out)).not.toContain('my-db-pass-9');
    expect(() => redactor.redact(nested(MAX_REDACTION_DEPTH + 1))).toThrow(/more than 512 levels/);
  });

  it('redacts a secret in the location of the error, as in the message', () => {
    const redactor = createRedactor({ secrets: ['my-db-pass-9'] });
    let value: unknown = 'x';
    for (let level = 0; level < MAX_REDACTION_DEPTH + 1; level++) value = { 'my-db-pass-9': value };
    expect(() => redactor.redact(value)).toThrow(
      expect.objectContaining({ location: expect.not.stringContaining('my-db-pass-9') }),
    );
  });
});

describe('errors', () => {
  it('keeps a StepwiseError one (code, retryable, isInstance) and redacts message, location, details and cause', () => {
    const redactor = createRedactor({ secrets: ['my-db-pass-9'] });
    const error = new StepwiseError('E201', 'tool "my-db-pass-9" is not registered', {
      location: '/steps/0/args/my-db-pass-9',
      retryable: true,
      details: { problems: [{ message: 'my-db-pass-9' }] },
      cause: new Error('inner my-db-pass-9'),
    });
    const out = redactor.redact(error);
    expect(StepwiseError.isInstance(out)).toBe(true);
    expect(out).toMatchObject({ code: 'E201', retryable: true, location: `/steps/0/args/${REDACTED}` });
    expect(out.message).toBe(`tool "${REDACTED}" is not registered`);
    expect(JSON.stringify(out.details)).not.toContain('my-db-pass-9');
    expect((out.cause as Error).message).toBe(`inner ${REDACTED}`);
    expect(error.message).toContain('my-db-pass-9');
  });
});
