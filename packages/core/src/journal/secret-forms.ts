/** Encoded forms shorter than this are not searched for: they would match ordinary text. */
const MIN_ENCODED_LENGTH = 8;

/**
 * The stable middle of `bytes` in base64 when they start `offset` bytes (0–2) into a longer
 * encoded message: the first and last groups depend on the neighbouring bytes, the rest not.
 */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]);
    const encoded = shifted.toString('base64');
    const first = offset === 0 ? 0 : 4;
    // Only complete groups are stable; a secret that ends the message gets its padding form below.
    const last = Math.floor(shifted.length / 3) * 4;
    if (last - first >= MIN_ENCODED_LENGTH) cores.push(encoded.slice(first, last));
  }
  cores.push(bytes.toString('base64'), bytes.toString('base64').replace(/=+$/, ''));
  return cores;
}

/**
 * The forms a secret commonly takes in tool output and command stdout: itself (matched
 * case-insensitively, which covers upper and lower case), its UTF-8 bytes read as Latin-1,
 * JSON-escaped, percent-encoded (as `encodeURIComponent`, `encodeURI` and forms write it, and
 * every byte as `%XX`), hex (either case), and base64 and base64url at every byte alignment.
 * The redactor also finds each form split by line breaks and with any bytes percent-encoded
 * (`splitFormsView`).
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set<string>([secret]);
  const add = (form: string) => {
    if (form.length >= MIN_ENCODED_LENGTH || form === secret) forms.add(form);
  };
  add(bytes.toString('latin1'));
  add(JSON.stringify(secret).slice(1, -1));
  add(encodeURIComponent(secret));
  add(encodeURI(secret));
  add(new URLSearchParams({ value: secret }).toString().slice('value='.length));
  add(bytes.toString('hex').replace(/../g, '%$&'));
  add(bytes.toString('hex'));
  for (const core of base64Cores(bytes)) {
    add(core);
    add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms];
}

/**
 * What splits or disguises a form without changing it: line breaks (real, or JSON-escaped `\n`
 * and `\r` as in text that holds JSON) anywhere — `fold`, MIME base64 wrapped at 64 or 76
 * columns, a secret printed over two lines — and percent-encoded bytes.
 */
const DISGUISE = /\r|\n|\\r|\\n|%[0-9A-Fa-f]{2}/g;
const HAS_DISGUISE = /[\r\n%]|\\[rn]/;

function undisguise(piece: string): string {
  return piece.startsWith('%') ? String.fromCharCode(Number.parseInt(piece.slice(1), 16)) : '';
}

/**
 * Replaces the forms `pattern` matches in `text` once line breaks are removed and percent-encoded
 * bytes decoded, mapping each match back onto the original text. Returns `text` itself when
 * there is nothing to find. `pattern` must have the `g` flag.
 */
export function redactDisguised(text: string, pattern: RegExp, replacement: string): string {
  if (!HAS_DISGUISE.test(text)) return text;
  const plain = text.replace(DISGUISE, undisguise);
  pattern.lastIndex = 0;
  if (plain === text || !pattern.test(plain)) return text;
  // Where each character of `plain` starts and ends in `text`: built only when there is a match.
  const starts = new Int32Array(plain.length);
  const ends = new Int32Array(plain.length);
  let at = 0;
  let last = 0;
  const copy = (until: number) => {
    for (; last < until; last++, at++) {
      starts[at] = last;
      ends[at] = last + 1;
    }
  };
  for (const piece of text.matchAll(DISGUISE)) {
    copy(piece.index);
    if (piece[0].startsWith('%')) {
      starts[at] = piece.index;
      ends[at++] = piece.index + 3;
    }
    last = piece.index + piece[0].length;
  }
  copy(text.length);
  let result = '';
  let from = 0;
  pattern.lastIndex = 0;
  for (const match of plain.matchAll(pattern)) {
    if (match[0].length === 0) continue;
    result += text.slice(from, starts[match.index]) + replacement;
    from = ends[match.index + match[0].length - 1] as number;
  }
  return result + text.slice(from);
}
