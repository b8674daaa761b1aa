import { readFile } from 'node:fs/promises';
import { ErrorCodes } from '@stepwise/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChatRequest, ModelError, openAICompatible } from '../src/index.js';
import {
  complete,
  type FakeOpenAIServer,
  type FakeReply,
  startFakeOpenAIServer,
  toolCall,
} from '../src/testing/index.js';
import { goalPlan, testEngine, testTools } from './helpers.js';

const request = (): ChatRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  toolChoice: 'auto',
  signal: new AbortController().signal,
});

const servers: FakeOpenAIServer[] = [];
const serve = async (replies: readonly FakeReply[]) => {
  const server = await startFakeOpenAIServer({ replies });
  servers.push(server);
  return server;
};
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** Real fetch, counted: how often the engine asked. */
function countingFetch(): { fetch: typeof fetch; calls: () => number } {
  let calls = 0;
  return {
    fetch: (input, init) => {
      calls += 1;
      return fetch(input, init);
    },
    calls: () => calls,
  };
}

async function failure(baseURL: string, options: { model?: string; apiKey?: string } = {}): Promise<ModelError> {
  const model = openAICompatible({
    baseURL,
    model: options.model ?? 'm',
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
  });
  const error = await model.generate(request()).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof ModelError)) throw new Error(`expected a ModelError, got ${String(error)}`);
  return error;
}

/** Runs one goal step on the endpoint: the step's error, after checking the run failed on the first request. */
async function stepFailure(options: { baseURL: string; apiKey?: string }) {
  const counted = countingFetch();
  const model = openAICompatible({ ...options, model: 'm', fetch: counted.fetch });
  const { engine } = testEngine({ model, tools: testTools().registry });
  const result = await engine.run(goalPlan([{ id: 'ask' }])).result;
  expect(result.status).toBe('failed');
  expect(counted.calls()).toBe(1);
  return result.steps[0]?.error;
}

describe('model endpoint errors name the URL and the cause', () => {
  it('a refused connection fails the step after one attempt, naming the URL and ECONNREFUSED', async () => {
    const closed = await serve([]);
    const baseURL = closed.url;
    await closed.close();
    servers.pop();
    const error = await stepFailure({ baseURL });
    expect(error).toMatchObject({ code: ErrorCodes.MODEL_ERROR, retryable: false });
    expect(error?.message).toContain(`${baseURL}/chat/completions`);
    expect(error?.message).toContain('ECONNREFUSED');
  });

  it('an unknown host is a DNS failure', async () => {
    const error = await failure('http://stepwise-endpoint.invalid/v1');
    expect(error.message).toContain('http://stepwise-endpoint.invalid/v1/chat/completions');
    expect(error.details).toMatchObject({ reason: 'dns' });
    expect(error.message).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });

  it('https to a plain-http server is a TLS failure, not retried', async () => {
    const server = await serve([complete('never')]);
    const error = await failure(server.url.replace('http:', 'https:'));
    expect(error.details).toMatchObject({ reason: 'tls' });
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(`https://127.0.0.1:${server.port}/v1/chat/completions`);
  });

  it('a refused key (401) is named as such, and the key never reaches the message', async () => {
    const server = await serve([{ status: 401, body: { error: { message: 'Incorrect API key provided' } } }]);
    const error = await failure(server.url, { apiKey: 'sk-wrong-key-123' });
    expect(error).toMatchObject({ status: 401, retryable: false, details: { reason: 'unauthorized' } });
    expect(error.message).toContain(`${server.url}/chat/completions answered 401 for model "m": Incorrect API key`);
    expect(error.message).toContain('apiKeyEnv');
    expect(error.message).not.toContain('sk-wrong-key-123');
  });

  it('a missing model and a wrong path are told apart', async () => {
    // Ollama's answers to an unknown model and to a path outside its API.
    const server = await serve([
      { status: 404, body: { error: 'model "qwen3:70b" not found, try pulling it first' } },
      { status: 404, body: '404 page not found' },
    ]);
    const missing = await failure(server.url, { model: 'qwen3:70b' });
    expect(missing.details).toMatchObject({ reason: 'model-not-found' });
    expect(missing.message).toContain('model "qwen3:70b"');
    const wrongPath = await failure(server.url);
    expect(wrongPath.details).toMatchObject({ reason: 'endpoint-not-found' });
    expect(wrongPath.message).toContain('/v1');
  });

  it('a 200 whose body is not JSON names the URL, the status, the content type and quotes the body, redacted', async () => {
    // A proxy's sign-in page that echoes the key it was sent: a plain word no pattern knows as a secret.
    const key = 'proxy-pass-4f9a2c71';
    const page = `<html>\n  <body>Sign in to the proxy: key ${key} is not allowed here</body>\n</html>`;
    const server = await serve([{ status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: page }]);
    const error = await stepFailure({ baseURL: server.url, apiKey: key });
    expect(error).toMatchObject({
      code: ErrorCodes.MODEL_ERROR,
      retryable: false,
      details: { reason: 'invalid-response', status: 200, contentType: 'text/html; charset=utf-8' },
    });
    expect(error?.message).toBe(
      `the model endpoint ${server.url}/chat/completions answered 200 (text/html; charset=utf-8) that is not JSON: <html> <body>Sign in to the proxy: key [REDACTED] is not allowed here</body> </html>`,
    );
  });

  it('a long or empty unusable body is quoted short, or said to be empty', async () => {
    const server = await serve([{ body: 'x'.repeat(5000) }, { body: '' }, { body: { choices: [] } }]);
    const long = await failure(server.url);
    expect(long.message).toContain(`${'x'.repeat(200)}…`);
    expect(long.message).not.toContain('x'.repeat(201));
    expect((await failure(server.url)).message).toContain(
      'answered 200 (application/json) that is not JSON (empty body)',
    );
    expect((await failure(server.url)).message).toContain(
      'answered 200 (application/json) with no choices: {"choices":[]}',
    );
  });

  it.each([6000, 6665])(
    'a port fetch blocks (%i) fails at once as a configuration error naming the URL and the cause',
    async (port) => {
      const baseURL = `http://127.0.0.1:${port}/v1`;
      const error = await stepFailure({ baseURL });
      expect(error).toMatchObject({
        code: ErrorCodes.MODEL_ERROR,
        retryable: false,
        details: { reason: 'url-refused' },
      });
      expect(error?.message).toContain(`${baseURL}/chat/completions`);
      expect(error?.message).toContain('bad port');
      expect(error?.message).not.toContain('network error');
    },
  );

  it('a base URL without http:// is a configuration error, not a network error', async () => {
    const error = await failure('localhost:11434/v1');
    expect(error).toMatchObject({ retryable: false, details: { reason: 'url-refused' } });
    expect(error.message).toContain('baseURL must start with http:// or https://');
  });

  it('rate limits and server errors stay transient', async () => {
    const server = await serve([
      { status: 429, body: { error: { message: 'slow down' } } },
      { status: 503, body: 'loading model' },
    ]);
    expect((await failure(server.url)).retryable).toBe(true);
    expect((await failure(server.url)).retryable).toBe(true);
  });
});

/** One README section per local server: its start command and the openAICompatible call. */
interface ServerSection {
  readonly command: string;
  readonly baseURL: string;
  readonly model: string;
}

async function readmeSection(heading: string): Promise<ServerSection> {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf(`#### ${heading}\n`);
  expect(start, `README section "${heading}"`).toBeGreaterThan(-1);
  const section = readme.slice(start, readme.indexOf('\n#', start + 1));
  const command = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const call = /openAICompatible\(\{ baseURL: '([^']+)', model: '([^']+)' \}\)/.exec(section);
  expect(call, `openAICompatible call in "${heading}"`).not.toBeNull();
  return { command, baseURL: call?.[1] ?? '', model: call?.[2] ?? '' };
}

/** The README's base URL with its host and port swapped for the fake server's. */
const onFakeServer = (baseURL: string, server: FakeOpenAIServer) =>
  `http://127.0.0.1:${server.port}${new URL(baseURL).pathname}`;

// Each server's answer to a request with tools when it is not set up for tool calls (its wording).
const serverSections = [
  {
    heading: 'Ollama',
    flags: [] as string[],
    misconfigured: { status: 400, body: { error: 'registry.ollama.ai/library/gemma:2b does not support tools' } },
    hint: 'an Ollama model that supports tools',
  },
  {
    heading: 'vLLM',
    flags: ['--enable-auto-tool-choice', '--tool-call-parser'],
    misconfigured: {
      status: 400,
      body: {
        object: 'error',
        message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        type: 'BadRequestError',
        code: 400,
      },
    },
    hint: '--enable-auto-tool-choice --tool-call-parser',
  },
  {
    heading: 'llama.cpp server',
    flags: ['--jinja'],
    misconfigured: {
      status: 500,
      body: { error: { code: 500, message: 'tools param requires --jinja flag', type: 'server_error' } },
    },
    hint: '--jinja',
  },
];

describe.each(serverSections)('README: $heading', ({ heading, flags, misconfigured, hint }) => {
  it('starts the server with the flags tool calls need, and its call drives a step', async () => {
    const section = await readmeSection(heading);
    for (const flag of flags) expect(section.command).toContain(flag);
    const server = await serve([toolCall('echo', { value: 'ping' }), complete('done')]);
    const model = openAICompatible({ baseURL: onFakeServer(section.baseURL, server), model: section.model });
    const { engine } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'ping', tools: ['echo'] }])).result;
    expect(result.status).toBe('completed');
    const first = server.requests[0];
    expect(first?.path).toBe(`${new URL(section.baseURL).pathname}/chat/completions`);
    expect(first?.body).toMatchObject({ model: section.model, tool_choice: 'auto' });
    expect(first?.body?.tools).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'function' })]));
  });

  it('without them, fails at once with an error that names what to change', async () => {
    const section = await readmeSection(heading);
    const server = await serve([misconfigured, misconfigured, misconfigured, misconfigured]);
    const model = openAICompatible({ baseURL: onFakeServer(section.baseURL, server), model: section.model });
    const { engine } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'ping', tools: ['echo'] }])).result;
    expect(result.status).toBe('failed');
    expect(server.requests).toHaveLength(1);
    const error = result.steps[0]?.error;
    expect(error).toMatchObject({
      code: ErrorCodes.MODEL_ERROR,
      retryable: false,
      details: { reason: 'tools-unsupported' },
    });
    expect(error?.message).toContain(hint);
    expect(error?.message).toContain(onFakeServer(section.baseURL, server));
  });
});
