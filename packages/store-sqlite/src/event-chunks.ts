import { ErrorCodes, StepwiseError } from '@stepwise/core';
import type Database from 'better-sqlite3';
import { RUN_KEY_SHIFT } from './view-sql.js';

/**
 * The bytes of one piece in `event_chunks` (schema version 10): four rows fill a table leaf page.
 * SQLite starts a new page at the end of a rowid table when the next row does not fit the last
 * one, so rows of one size that divides the page leave nothing empty. A leaf holds its page less
 * an 8-byte header; each row costs its piece plus at most 23 bytes: a 2-byte cell pointer, the
 * record's length (2), its rowid (up to 4 bytes: 2²⁸ pieces), the record header (5) and the event id
 * (8). 999 bytes at the default 4 KB page.
 */
export function chunkBytesOf(pageSize: number): number {
  return Math.floor((pageSize - 8) / 4) - 23;
}

/** Where an event's value starts in `event_chunks`: its pieces' rowids are `first` to `first + count − 1`. */
export interface StoredChunks {
  readonly first: number;
  readonly count: number;
  /** The bytes after the last whole piece, as text: the event's payload holds them at the value's place. */
  readonly tail: string;
}

/** A UTF-8 continuation byte: a cut before it would split a character. */
const isContinuation = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80;

/**
 * Writes the leading whole pieces of large values, each a row of `chunkBytes` bytes (the last may be
 * up to 3 bytes shorter, so the tail starts on a character); what is left (less than a piece) stays
 * in the event's row, among the small rows of the journal, as SQLite fills overflow pages and keeps
 * the rest of a long row on its leaf. The pieces of an event take consecutive rowids (one writer,
 * in the append's transaction), which its `blob_refs` names by the first and the count.
 */
export class ChunkWriter {
  readonly chunkBytes: number;
  readonly #insert: Database.Statement<[number, number, Buffer]>;

  constructor(sqlite: Database.Database, chunkBytes: number) {
    this.chunkBytes = chunkBytes;
    this.#insert = sqlite.prepare(`insert into event_chunks (event_id, content) values (? * ${RUN_KEY_SHIFT} + ?, ?)`);
  }

  /** Whether a value of `bytes` UTF-8 bytes is written in pieces (it fills at least one). */
  fills(bytes: number): boolean {
    return bytes >= this.chunkBytes;
  }

  /** Writes `text`'s whole pieces for event `seq` of run `runKey`. */
  write(text: string, runKey: number, seq: number): StoredChunks {
    const bytes = Buffer.from(text, 'utf8');
    const size = this.chunkBytes;
    let cut = Math.floor(bytes.length / size) * size;
    while (isContinuation(bytes[cut])) cut--;
    let first = 0;
    let count = 0;
    for (let start = 0; start < cut; start += size) {
      const rowid = Number(
        this.#insert.run(runKey, seq, bytes.subarray(start, Math.min(start + size, cut))).lastInsertRowid,
      );
      if (count++ === 0) first = rowid;
    }
    return { first, count, tail: bytes.toString('utf8', cut) };
  }
}

/** Reads the pieces `ChunkWriter` wrote, in order. */
export class ChunkReader {
  readonly #path: string;
  readonly #select: Database.Statement<[number, number], Buffer>;

  constructor(sqlite: Database.Database, path: string) {
    this.#path = path;
    this.#select = sqlite
      .prepare<[number, number], Buffer>('select content from event_chunks where id between ? and ? order by id')
      .pluck();
  }

  /** The value's text: its `count` pieces from rowid `first`, then `tail`. */
  read(first: number, count: number, tail: string): string {
    const pieces = this.#select.all(first, first + count - 1);
    if (pieces.length !== count) {
      throw new StepwiseError(
        ErrorCodes.STORE_UNAVAILABLE,
        `SQLite store ${this.#path}: event_chunks ${first}–${first + count - 1} are missing; the database was damaged outside Stepwise`,
        { location: this.#path },
      );
    }
    return Buffer.concat(pieces).toString('utf8') + tail;
  }
}
