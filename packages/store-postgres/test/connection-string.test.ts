import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';

const postgres = await testPostgres();

/** The error `createPostgresStore` throws for `connectionString`, or undefined when it takes it. */
function refusal(connectionString: string): StepwiseError | undefined {
  try {
    const store = createPostgresStore({ connectionString });
    void store.close();
    return undefined;
  } catch (error) {
    if (!StepwiseError.isInstance(error)) throw error;
    return error;
  }
}

describe('connectionString', () => {
  it.each([
    ['text that is not a URL', 'not a url'],
    ['a host name alone', 'db.example.com'],
    ['another database', 'mysql://app:s3cret-pass@db:3306/app'],
    ['a web address', 'https://db.example.com/app'],
    ['a URL without a scheme', 'app:s3cret-pass@db:5432/app'],
  ])('refuses %s with a configuration error (E601) at connectionString, quoting no password', (_what, text) => {
    const error = refusal(text);
    expect(error?.code).toBe(ErrorCodes.CONFIG_INVALID);
    expect(error?.location).toBe('connectionString');
    expect(error?.message).toContain('postgres://user:password@host:port/database');
    expect(error?.message).not.toContain('s3cret');
  });

  it.each([
    'postgres://app:secret@db.example.com:5432/app',
    'postgresql://app@db.example.com/app?sslmode=require',
    'postgres:///app?host=/var/run/postgresql',
    'postgresql://app:secret@/app?host=/var/run/postgresql',
    'postgres://app:p%40ss word@db/app',
    'socket:/var/run/postgresql?db=app',
    '/var/run/postgresql app',
  ])('takes %s as pg reads it (nothing connects until the store is used)', (text) => {
    expect(refusal(text)).toBeUndefined();
  });
});

describe.skipIf(!postgres)('connectionString forms against a real server', () => {
  const server = postgres?.server;
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    server?.close();
  });

  const forms = (): [string, string][] => {
    const url = new URL(postgres?.url as string);
    const both: [string, string][] = [['postgresql://', url.href.replace(/^postgres:/, 'postgresql:')]];
    // The throwaway server also listens on a Unix socket in its directory.
    if (server) {
      const socket = `host=${encodeURIComponent(server.directory)}&port=${server.port}`;
      both.push(['a socket with the user in the URL', `postgres://${url.username}@/postgres?${socket}`]);
      both.push(['a socket with an empty authority', `postgres:///postgres?${socket}&user=${url.username}`]);
    }
    return both;
  };

  it('connects through each accepted form', async () => {
    for (const [what, connectionString] of forms()) {
      const store = createPostgresStore({ connectionString, schema: `forms_${process.pid}` });
      stores.push(store);
      await expect(store.ready, what).resolves.toBeUndefined();
      expect(await store.getRun('none'), what).toBeUndefined();
    }
  });
});
