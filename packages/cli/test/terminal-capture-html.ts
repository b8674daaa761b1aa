import { textWidth } from '../src/terminal.js';

// A `tmux capture-pane -e` text as an HTML page that looks like the terminal: one row per line,
// every grapheme in as many cells as it takes, the SGR colours and attributes tmux keeps.

const COLOURS = ['#1e1e1e', '#cd3131', '#0dbc79', '#e5e510', '#2472c8', '#bc3fbc', '#11a8cd', '#e5e5e5'];
const BRIGHT = ['#767676', '#f14c4c', '#23d18b', '#f5f543', '#3b8eea', '#d670d6', '#29b8db', '#ffffff'];
const FOREGROUND = '#d4d4d4';
const BACKGROUND = '#1e1e1e';

interface Style {
  foreground?: string;
  background?: string;
  bold?: boolean;
  dim?: boolean;
  inverse?: boolean;
}

function palette256(index: number): string {
  if (index < 8) return COLOURS[index] as string;
  if (index < 16) return BRIGHT[index - 8] as string;
  if (index >= 232) return `rgb(${8 + (index - 232) * 10},${8 + (index - 232) * 10},${8 + (index - 232) * 10})`;
  const cube = index - 16;
  const level = (value: number) => (value === 0 ? 0 : 55 + value * 40);
  return `rgb(${level(Math.floor(cube / 36))},${level(Math.floor(cube / 6) % 6)},${level(cube % 6)})`;
}

/** Applies one SGR sequence's parameters (`1;38;5;244`) to `style`. */
function applySgr(style: Style, parameters: string): Style {
  const codes = parameters === '' ? [0] : parameters.split(';').map(Number);
  let next: Style = { ...style };
  for (let index = 0; index < codes.length; index += 1) {
    const code = codes[index] as number;
    if (code === 0) next = {};
    else if (code === 1) next.bold = true;
    else if (code === 2) next.dim = true;
    else if (code === 22) next = { ...next, bold: false, dim: false };
    else if (code === 7) next.inverse = true;
    else if (code === 27) next.inverse = false;
    else if (code >= 30 && code <= 37) next.foreground = COLOURS[code - 30];
    else if (code >= 90 && code <= 97) next.foreground = BRIGHT[code - 90];
    else if (code === 39) next.foreground = undefined;
    else if (code >= 40 && code <= 47) next.background = COLOURS[code - 40];
    else if (code >= 100 && code <= 107) next.background = BRIGHT[code - 100];
    else if (code === 49) next.background = undefined;
    else if ((code === 38 || code === 48) && codes[index + 1] === 5) {
      const colour = palette256(codes[index + 2] ?? 0);
      if (code === 38) next.foreground = colour;
      else next.background = colour;
      index += 2;
    } else if ((code === 38 || code === 48) && codes[index + 1] === 2) {
      const colour = `rgb(${codes[index + 2]},${codes[index + 3]},${codes[index + 4]})`;
      if (code === 38) next.foreground = colour;
      else next.background = colour;
      index += 4;
    }
  }
  return next;
}

function css(style: Style): string {
  const foreground = style.foreground ?? FOREGROUND;
  const background = style.background ?? BACKGROUND;
  const [colour, fill] = style.inverse ? [background, foreground] : [foreground, background];
  return [
    `color:${colour}`,
    fill === BACKGROUND ? '' : `background:${fill}`,
    style.bold ? 'font-weight:bold' : '',
    style.dim ? 'opacity:0.6' : '',
  ]
    .filter(Boolean)
    .join(';');
}

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

function rowHtml(line: string, start: Style): { html: string; style: Style } {
  let style = start;
  let html = '';
  for (const part of line.split(/(\u001b\[[0-9;]*m)/)) {
    const sgr = /^\u001b\[([0-9;]*)m$/.exec(part);
    if (sgr) {
      style = applySgr(style, sgr[1] ?? '');
      continue;
    }
    for (const { segment } of segmenter.segment(part)) {
      const cells = textWidth(segment);
      if (cells === 0) continue;
      html += `<span class="cell" style="width:${cells}ch;${css(style)}">${escapeHtml(segment)}</span>`;
    }
  }
  return { html, style };
}

/** The page for a capture of a `columns`×`rows` pane; the rows shown are the capture's last `rows` lines. */
export function terminalCaptureHtml(
  capture: string,
  size: { readonly columns: number; readonly rows: number },
): string {
  const lines = capture.replace(/\n$/, '').split('\n');
  let style: Style = {};
  const rows: string[] = [];
  for (const line of lines.slice(-size.rows)) {
    const row = rowHtml(line, style);
    style = row.style;
    rows.push(`<div class="row">${row.html}</div>`);
  }
  while (rows.length < size.rows) rows.push('<div class="row"></div>');
  return `<!doctype html>
<html><head><meta charset="utf-8"><style>
body { margin: 0; background: #111; }
#terminal { display: inline-block; padding: 12px; background: ${BACKGROUND}; font: 16px/1.25 'DejaVu Sans Mono', 'WenQuanYi Micro Hei Mono', 'Noto Sans Mono CJK JP', monospace; color: ${FOREGROUND}; }
.row { width: ${size.columns}ch; height: 1.25em; white-space: pre; overflow: hidden; }
.cell { display: inline-block; text-align: center; overflow: hidden; vertical-align: top; height: 1.25em; }
</style></head><body><div id="terminal">${rows.join('\n')}</div></body></html>
`;
}
