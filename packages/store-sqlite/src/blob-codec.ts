import type { RunEvent } from '@stepwise/core';
import { sha256 } from '@stepwise/core/store';
import type Database from 'better-sqlite3';
import { chainText } from './chain-column.js';
import { type ChunkReader, ChunkWriter, type StoredChunks } from './event-chunks.js';
import { typeOfCode } from './event-types.js';
import { packPayload, unpackPayload } from './payload-packing.js';
import { decodeTime } from './time-codec.js';

/** A value as a column stores it: inline JSON/text, or the SHA-256 of its row in `blobs`. */
export interface Encoded {
  readonly text: string | null;
  readonly sha256: string | null;
}

export const NOTHING: Encoded = { text: null, sha256: null };

/** The shortest JSON text `BlobWriter.textOf` keeps for the rest of the batch. */
const REMEMBERED_TEXT = 64;

/**
 * Where a value of an event was moved: to `blobs` ([path in the payload, sha256, how to read it]),
 * or, since schema version 10, its leading pieces to `event_chunks` ([path, first rowid,
 * `json-chunks`, count]; the payload holds the rest of its JSON text at the path).
 */
export type BlobRef =
  | [path: (string | number)[], sha256: string, kind: 'json' | 'text']
  | [path: (string | number)[], first: number, kind: 'json-chunks', count: number];

/** What a stored event refers to: blobs by SHA-256, pieces in `event_chunks`. */
export interface StoredValues {
  blob(sha256: string): string;
  readonly chunks: ChunkReader;
}

/**
 * Stores large values once, keyed by the SHA-256 of their text. Small values stay inline: hashing
 * every few-byte output would cost more than it saves.
 */
export class BlobWriter {
  readonly threshold: number;
  /** The limit for tool outputs, which only the journal's rowid table holds inline (see `outputs`). */
  readonly outputThreshold: number;
  readonly #insert: Database.Statement;
  /** Writes outputs of a piece or more (up to `outputThreshold`) in pieces; `undefined`: never. */
  readonly #chunks: ChunkWriter | undefined;
  // Within a batch the same output usually appears several times (tool-result, step-end, steps,
  // executions): hash it once.
  readonly #known = new Map<string, string>();
  /**
   * The JSON text of the batch's objects by identity: a plan is the run-start's payload, its blob
   * and the run's row; an output its tool-result's, its step-end's and its execution's. An event
   * is not changed while it is appended, so its values' text is computed once per batch.
   */
  readonly #texts = new Map<object, string>();

  /** `chunkBytes`: the size of an output's pieces (see `chunkBytesOf`); none without it. */
  constructor(sqlite: Database.Database, threshold: number, outputThreshold = threshold, chunkBytes?: number) {
    this.threshold = threshold;
    this.outputThreshold = outputThreshold;
    this.#chunks = chunkBytes === undefined ? undefined : new ChunkWriter(sqlite, chunkBytes);
    this.#insert = sqlite.prepare('insert into blobs (sha256, size, content) values (?, ?, ?) on conflict do nothing');
  }

  isLarge(text: string, threshold = this.threshold): boolean {
    // A UTF-16 unit is at most 3 UTF-8 bytes: most texts are decided without counting.
    return text.length * 3 > threshold && Buffer.byteLength(text, 'utf8') > threshold;
  }

  json(value: unknown, threshold = this.threshold): Encoded {
    if (value === undefined) return NOTHING;
    const text = this.textOf(value);
    return text === undefined ? NOTHING : this.text(text, threshold);
  }

  /**
   * `JSON.stringify(value)`, once per batch for an object whose text is long: a short one (a no-op
   * step's `{}`) is written again faster than it is looked up.
   */
  textOf(value: unknown): string | undefined {
    if (typeof value !== 'object' || value === null) return JSON.stringify(value) as string | undefined;
    const known = this.#texts.get(value);
    if (known !== undefined) return known;
    const text = JSON.stringify(value) as string | undefined;
    if (text !== undefined && text.length >= REMEMBERED_TEXT) this.#texts.set(value, text);
    return text;
  }

  /** A tool's output as the journal and the execution's row hold it (see `outputThreshold`). */
  output(value: unknown): Encoded {
    return this.json(value, this.outputThreshold);
  }

  /**
   * An output as event `seq` of run `runKey` holds it: inline (`Encoded.text`), in `blobs` (over
   * `outputThreshold`), or its whole pieces in `event_chunks` when it fills one (see `ChunkWriter`).
   */
  eventOutput(value: unknown, runKey: number, seq: number): Encoded | StoredChunks {
    const text = this.textOf(value);
    if (text === undefined) return NOTHING;
    const chunks = this.#chunks;
    if (chunks === undefined || text.length * 3 < chunks.chunkBytes || this.isLarge(text, this.outputThreshold))
      return this.text(text, this.outputThreshold);
    return chunks.fills(Buffer.byteLength(text, 'utf8')) ? chunks.write(text, runKey, seq) : { text, sha256: null };
  }

  text(text: string, threshold = this.threshold): Encoded {
    if (!this.isLarge(text, threshold)) return { text, sha256: null };
    let digest = this.#known.get(text);
    if (digest === undefined) {
      digest = sha256(text);
      this.#insert.run(digest, Buffer.byteLength(text, 'utf8'), text);
      this.#known.set(text, digest);
    }
    return { text: null, sha256: digest };
  }

  /** Forgets the batch's hashes (a rolled-back batch must not leave believed-stored blobs). */
  reset(): void {
    // Only maps that hold something: V8's Map#clear allocates a new table even for an empty map
    // (about 0.2 µs), and most batches (a no-op step's) leave both empty.
    if (this.#known.size > 0) this.#known.clear();
    if (this.#texts.size > 0) this.#texts.clear();
  }
}

interface Candidate {
  readonly path: (string | number)[];
  readonly kind: 'json' | 'text';
  /** A tool output: held inline up to the blob writer's `outputThreshold`. */
  readonly output?: true;
}

function artifactCandidates(artifacts: unknown, prefix: string[]): Candidate[] {
  if (!Array.isArray(artifacts)) return [];
  return artifacts.map((_, index) => ({ path: [...prefix, 'artifacts', index, 'content'], kind: 'text' as const }));
}

/** The values of an event that may be large: outputs, artifacts, arguments, plans, model traffic. */
function candidates(type: string, rest: Record<string, unknown>): Candidate[] {
  switch (type) {
    case 'run-start':
      return [{ path: ['plan'], kind: 'json' }];
    case 'tool-call':
    case 'approval-request':
    case 'recovery-decision':
      return [{ path: ['args'], kind: 'json' }];
    case 'tool-result':
      return [{ path: ['output'], kind: 'json', output: true }, ...artifactCandidates(rest.artifacts, [])];
    case 'step-end':
      return [
        { path: ['result', 'output'], kind: 'json', output: true },
        ...artifactCandidates((rest.result as { artifacts?: unknown } | undefined)?.artifacts, ['result']),
      ];
    case 'model-call':
      return [
        { path: ['request'], kind: 'json' },
        { path: ['response'], kind: 'json' },
      ];
    case 'validation-end':
      // The `validations` view reads it back from `blobs` by the first (only) reference.
      return [{ path: ['output'], kind: 'text' }];
    default:
      return [];
  }
}

function valueAt(root: unknown, path: readonly (string | number)[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[key];
  }
  return value;
}

/** A copy of `root` with `value` at `path`; only the containers along the path are copied. */
function withValueAt(root: unknown, path: readonly (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [key, ...rest] = path as [string | number, ...(string | number)[]];
  const container = root as Record<string | number, unknown>;
  const copy = (Array.isArray(root) ? [...root] : { ...container }) as Record<string | number, unknown>;
  copy[key] = withValueAt(container[key], rest, value);
  return copy;
}

function setValueAt(root: unknown, path: readonly (string | number)[], value: unknown): void {
  let container = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) container = container[key] as Record<string | number, unknown>;
  container[path[path.length - 1] as string | number] = value;
}

export interface EncodedEvent {
  readonly payload: string;
  readonly blobRefs: string | null;
  readonly packing: number;
  /** The chain value's bytes (`events.chain`), `null` when the payload holds it. */
  readonly chain: Buffer | null;
}

/** How a candidate value of event `seq` of run `runKey` is stored: inline, in `blobs`, or in pieces. */
function storeCandidate(candidate: Candidate, value: unknown, blobs: BlobWriter, runKey: number, seq: number) {
  if (candidate.kind === 'text') return typeof value === 'string' ? blobs.text(value) : NOTHING;
  return candidate.output ? blobs.eventOutput(value, runKey, seq) : blobs.json(value);
}

/**
 * The event's row: the columns are left out of the payload, large values go to `blobs`, outputs of
 * a piece or more to `event_chunks` (see `BlobWriter.eventOutput`; `runKey` names their rows with the
 * event's seq). `outputDistance` and `attempt` are what the writer knows of other events (see `packPayload`),
 * `chainInto` where the chain value's bytes go (see `packPayload`).
 */
export function encodeEvent(
  runId: string,
  event: RunEvent,
  blobs: BlobWriter,
  runKey: number,
  outputDistance = 0,
  attempt?: number,
  chainInto?: Buffer,
): EncodedEvent {
  const packed = packPayload(
    runId,
    event as unknown as Record<string, unknown>,
    outputDistance,
    attempt,
    undefined,
    chainInto,
  );
  const { payload: rest, packing, chain } = packed;
  const payload = JSON.stringify(rest);
  if (!blobs.isLarge(payload)) return { payload, blobRefs: null, packing, chain };
  const refs: BlobRef[] = [];
  let stored: unknown = rest;
  for (const candidate of candidates(event.type, rest)) {
    const value = valueAt(stored, candidate.path);
    if (value === undefined) continue;
    const encoded = storeCandidate(candidate, value, blobs, runKey, event.seq);
    if ('first' in encoded) {
      stored = withValueAt(stored, candidate.path, encoded.tail);
      refs.push([candidate.path, encoded.first, 'json-chunks', encoded.count]);
    } else if (encoded.sha256 !== null) {
      stored = withValueAt(stored, candidate.path, null);
      refs.push([candidate.path, encoded.sha256, candidate.kind]);
    }
  }
  if (refs.length === 0) return { payload, blobRefs: null, packing, chain };
  return { payload: JSON.stringify(stored), blobRefs: JSON.stringify(refs), packing, chain };
}

/** The value a blob reference points at, put back at its place in `rest` (a payload as stored). */
function restoreValue(rest: unknown, ref: BlobRef, values: StoredValues): void {
  const [path, reference, kind] = ref;
  if (kind === 'json-chunks') {
    const tail = valueAt(rest, path) as string;
    setValueAt(rest, path, JSON.parse(values.chunks.read(reference as number, ref[3] as number, tail)));
    return;
  }
  const content = values.blob(reference as string);
  setValueAt(rest, path, kind === 'text' ? content : JSON.parse(content));
}

/** The columns of `events` an event is read from (`EVENT_COLUMNS`, prefixed as the query needs). */
export interface EventRow {
  readonly seq: number;
  readonly type_code: number | string;
  readonly at: string | number;
  readonly payload: string;
  readonly blob_refs: string | null;
  readonly packing: number;
  readonly chain: Uint8Array | null;
}

/** SQL: the columns of an `EventRow` of `events` aliased `alias`. */
export const eventColumns = (alias: string): string =>
  ['seq', 'type_code', 'at', 'payload', 'blob_refs', 'packing', 'chain']
    .map((column) => `${alias}.${column}`)
    .join(', ');

/**
 * Rebuilds the event exactly as it was appended (key order included: type first, run/seq/at last).
 * `eventAt(seq)` is another event of the run: a step-end may hold its output in its tool-result.
 */
export function decodeEvent(
  runId: string,
  row: EventRow,
  values: StoredValues,
  eventAt: (seq: number) => RunEvent | undefined,
): RunEvent {
  let rest = JSON.parse(row.payload) as Record<string, unknown>;
  if (row.blob_refs !== null) {
    for (const ref of JSON.parse(row.blob_refs) as BlobRef[]) restoreValue(rest, ref, values);
  }
  const atMs = typeof row.at === 'number' ? row.at : undefined;
  rest = unpackPayload(runId, rest, row.packing, atMs, (distance) =>
    // A copy: the two events are returned as separate objects, as they were appended.
    structuredClone((eventAt(row.seq - distance) as { output?: unknown } | undefined)?.output),
  );
  const event = { type: typeOfCode(row.type_code), ...rest, runId, seq: row.seq, at: decodeTime(row.at) };
  // Its last key, where the journal put it (a chain value elsewhere stays in the payload).
  if (row.chain !== null) (event as { chain?: string }).chain = chainText(row.chain);
  return event as RunEvent;
}

/** Reads a column pair written from an `Encoded`. */
export function decodeJson(text: string | null, sha256: string | null, readBlob: (sha256: string) => string): unknown {
  if (text !== null) return JSON.parse(text);
  if (sha256 !== null) return JSON.parse(readBlob(sha256));
  return undefined;
}
