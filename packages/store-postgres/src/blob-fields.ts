import { createHash } from 'node:crypto';
import type { RunEvent } from '@stepwise/core';

/** Event fields that can grow large (plans, arguments, outputs, artifacts, model traffic). */
const LARGE_FIELDS = ['plan', 'args', 'output', 'artifacts', 'request', 'response', 'result'] as const;

export interface BlobRow {
  readonly sha256: string;
  readonly size: number;
  readonly content: string;
}

/** An event as the `events` table holds it: the payload without its large fields, which went to `blobs`. */
export interface PackedEvent {
  readonly payload: string;
  readonly refs: Record<string, string> | undefined;
  readonly blobs: readonly BlobRow[];
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Moves every large field of at least `threshold` bytes of JSON into a content-addressed blob. */
export function packEvent(event: RunEvent, threshold: number): PackedEvent {
  const record = event as unknown as Record<string, unknown>;
  let rest: Record<string, unknown> | undefined;
  let refs: Record<string, string> | undefined;
  const blobs: BlobRow[] = [];
  for (const field of LARGE_FIELDS) {
    const value = record[field];
    if (value === undefined) continue;
    const json = JSON.stringify(value);
    if (json === undefined || json.length < threshold) continue;
    const hash = sha256(json);
    blobs.push({ sha256: hash, size: Buffer.byteLength(json), content: json });
    rest ??= { ...record };
    delete rest[field];
    refs = { ...refs, [field]: hash };
  }
  return { payload: JSON.stringify(rest ?? record), refs, blobs };
}

/** Puts blob contents back into a payload read from `events`. */
export function unpackEvent(
  payload: Record<string, unknown>,
  refs: Record<string, string> | null,
  contents: ReadonlyMap<string, string>,
): RunEvent {
  if (!refs) return payload as unknown as RunEvent;
  const event = { ...payload };
  for (const [field, hash] of Object.entries(refs)) {
    const content = contents.get(hash);
    if (content === undefined) throw new Error(`blob ${hash} of field ${field} is missing`);
    event[field] = JSON.parse(content);
  }
  return event as unknown as RunEvent;
}
