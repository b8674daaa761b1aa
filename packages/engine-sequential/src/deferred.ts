/** A promise with its settle functions, for results that settle far from where they start. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  // Observed here so a host that never awaits it does not crash on an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}
