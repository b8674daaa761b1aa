/** Text made safe inside HTML elements and quoted attributes. */
export function escapeHtml(text: unknown): string {
  const value = String(text);
  // One pass, and none for the usual text with nothing to escape: a large run's page escapes a lot.
  return UNSAFE.test(value) ? value.replace(UNSAFE_ALL, (character) => ENTITIES[character] as string) : value;
}

const UNSAFE = /[&<>"']/;
const UNSAFE_ALL = /[&<>"']/g;
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Cuts `text` to `length` characters, the last one an ellipsis. */
export function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** Embeds JSON in a `<script>` safely: no `</script>`, no HTML comment openers, no line separators. */
export function embedJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
