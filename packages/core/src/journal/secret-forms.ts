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
 * Shared with the tests of the workspace's packages; not part of the public API.
 * @internal
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
const HAS_DISGUISE = /[\r\n%]|\\[rn]/;
const LINE_BREAKS = /[\r\n]|\\[rn]/g;
const PERCENT_BYTE = /%[0-9A-Fa-f]{2}/g;

const decodeByte = (encoded: string) => String.fromCharCode(Number.parseInt(encoded.slice(1), 16));

/** `text` with `pattern`'s matches dropped (or decoded), and where each character of the result came from in `text`. */
function mapped(text: string, pattern: RegExp, decode?: (match: string) => string) {
  const out: string[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let last = 0;
  const copy = (until: number) => {
    out.push(text.slice(last, until));
    for (; last < until; last++) {
      starts.push(last);
      ends.push(last + 1);
    }
  };
  for (const match of text.matchAll(pattern)) {
    copy(match.index);
    if (decode) {
      out.push(decode(match[0]));
      starts.push(match.index);
      ends.push(match.index + match[0].length);
    }
    last = match.index + match[0].length;
  }
  copy(text.length);
  return { text: out.join(''), starts, ends };
}

/**
 * Replaces the forms `pattern` matches in `text` once line breaks are removed and percent-encoded
 * bytes decoded, mapping each match back onto the original text. Returns `text` itself when
 * there is nothing to find. `pattern` must have the `g` flag.
 */
export function redactDisguised(text: string, pattern: RegExp, replacement: string): string {
  if (!HAS_DISGUISE.test(text)) return text;
  // The quick test first, without positions (most multi-line text holds no secret).
  const joinedText = text.replace(LINE_BREAKS, '');
  const plainText = joinedText.includes('%') ? joinedText.replace(PERCENT_BYTE, decodeByte) : joinedText;
  pattern.lastIndex = 0;
  if (plainText === text || !pattern.test(plainText)) return text;
  // Positions only now: line breaks out first, then bytes decoded (an escape split over lines counts).
  const joined = mapped(text, LINE_BREAKS);
  const plain = mapped(joined.text, PERCENT_BYTE, decodeByte);
  const startOf = (at: number) => joined.starts[plain.starts[at] as number] as number;
  const endOf = (at: number) => joined.ends[(plain.ends[at] as number) - 1] as number;
  let result = '';
  let from = 0;
  pattern.lastIndex = 0;
  for (const match of plain.text.matchAll(pattern)) {
    if (match[0].length === 0) continue;
    result += text.slice(from, startOf(match.index)) + replacement;
    from = endOf(match.index + match[0].length - 1);
  }
  return result + text.slice(from);
}
