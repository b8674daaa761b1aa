/** Options of a `StreamRedactor`; the defaults suit a command's output shown while it runs. */
export interface StreamRedactorOptions {
  /** A stream quiet this long (ms) releases everything it holds. Default 250. */
  readonly quietMs?: number;
  /** Held text beyond this many characters is released even mid-line. Default 16,384. */
  readonly maxHeld?: number;
  /** How much already released text is redacted again with what follows it. Default 8,192. */
  readonly contextChars?: number;
}

/**
 * Redacts text that arrives in pieces, so that a secret split between two writes never shows in
 * part. Redacting each piece alone would let `sk-abc…` through when it arrives as `sk-a` + `bc…`,
 * and a PEM key printed line by line would only lose its first line. Three rules:
 * - it releases whole lines only, and holds the last complete line back too (a secret wrapped over
 *   two lines is redacted as one), until the stream is quiet for `quietMs` or the text held grows
 *   past `maxHeld`;
 * - it cuts only where redacting the two sides apart gives what redacting them together gives;
 * - it redacts released text after the last `contextChars` it released, so a construct that began
 *   earlier (an unterminated `-----BEGIN … PRIVATE KEY-----`) still covers what follows.
 * What it cannot catch is what the journal's redaction cannot catch, plus a secret written half
 * before and half after a pause longer than `quietMs`.
 */
export class StreamRedactor {
  readonly #redactText: (text: string) => string;
  readonly #quietMs: number;
  readonly #maxHeld: number;
  readonly #contextChars: number;
  #held = '';
  #context = '';
  #lastWriteAt = 0;

  constructor(redactText: (text: string) => string, options: StreamRedactorOptions = {}) {
    this.#redactText = redactText;
    this.#quietMs = options.quietMs ?? 250;
    this.#maxHeld = options.maxHeld ?? 16_384;
    this.#contextChars = options.contextChars ?? 8_192;
  }

  /** Whether text is held that `take` has not released yet. */
  get holding(): boolean {
    return this.#held.length > 0;
  }

  write(text: string, now: number): void {
    this.#held += text;
    this.#lastWriteAt = now;
  }

  /** The redacted text that may be shown now ('' when everything must wait); `final` releases all. */
  take(now: number, final = false): string {
    if (this.#held.length === 0) return '';
    const release = final || now - this.#lastWriteAt >= this.#quietMs;
    const cut = release ? this.#held.length : this.#safeCut(this.#lineCut());
    if (cut <= 0) return '';
    const head = this.#held.slice(0, cut);
    this.#held = this.#held.slice(cut);
    const shown = this.#render(head);
    this.#context = (this.#context + head).slice(-this.#contextChars);
    return shown;
  }

  /** Up to the line before the last complete one; mid-line only once too much is held. */
  #lineCut(): number {
    const held = this.#held;
    const last = held.lastIndexOf('\n');
    const cut = last <= 0 ? 0 : held.lastIndexOf('\n', last - 1) + 1;
    if (cut > 0 || held.length <= this.#maxHeld) return cut;
    return held.length - Math.floor(this.#maxHeld / 4);
  }

  /** Moves `cut` back until the text redacts the same apart as together; 0 when no cut is safe. */
  #safeCut(cut: number): number {
    const held = this.#held;
    const whole = this.#redactText(held);
    for (let at = cut, tries = 0; at > 0 && tries < 8; tries++) {
      if (this.#redactText(held.slice(0, at)) + this.#redactText(held.slice(at)) === whole) return at;
      const newline = held.lastIndexOf('\n', at - 2);
      at = newline >= 0 ? newline + 1 : at - 256;
    }
    // Nowhere safe to cut: release everything at once only when holding more would be unbounded.
    return held.length > 4 * this.#maxHeld ? held.length : 0;
  }

  #render(head: string): string {
    if (this.#context.length === 0) return this.#redactText(head);
    const before = this.#redactText(this.#context);
    const after = this.#redactText(this.#context + head);
    if (after.startsWith(before)) return after.slice(before.length);
    // A match now reaches back into released text: show the rest of it redacted from where the two differ.
    let common = 0;
    while (common < before.length && before.charCodeAt(common) === after.charCodeAt(common)) common++;
    return after.slice(common);
  }
}
