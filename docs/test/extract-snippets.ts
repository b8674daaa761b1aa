import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The user documentation the snippets come from, relative to the repository root. */
export function documentationFiles(root: string): string[] {
  const readmes = (folder: string) =>
    readdirSync(path.join(root, folder), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.join(folder, entry.name, 'README.md'))
      .filter((file) => {
        try {
          readFileSync(path.join(root, file));
          return true;
        } catch {
          return false;
        }
      });
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join('docs', name));
  return ['README.md', ...readmes('packages'), ...readmes('examples'), ...docs];
}

export type SnippetLanguage = 'ts' | 'js' | 'json';

/**
 * One fenced code block. The info string's first word is the language; the words after it are
 * flags: `run` executes a TypeScript/JavaScript snippet after type-checking it. An HTML comment
 * `<!-- snippet-prelude ... -->` right before the fence is prepended when checking (declarations a
 * continued example relies on), and is invisible on GitHub, npm and the docs site.
 */
export interface Snippet {
  /** Markdown file, relative to the repository root. */
  readonly file: string;
  /** 1-based line of the snippet's first code line in the markdown file. */
  readonly line: number;
  readonly language: SnippetLanguage;
  readonly run: boolean;
  readonly prelude: string;
  readonly code: string;
}

const LANGUAGES: Record<string, SnippetLanguage> = {
  ts: 'ts',
  typescript: 'ts',
  js: 'js',
  javascript: 'js',
  mjs: 'js',
  json: 'json',
  jsonc: 'json',
};

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;
const PRELUDE = /^<!--\s*snippet-prelude\s*([\s\S]*?)-->\s*$/;

export function extractSnippets(file: string, markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = FENCE.exec(lines[index] ?? '');
    if (!open) continue;
    const [, indent = '', fence = '', info = ''] = open;
    const [word = '', ...flags] = info.trim().split(/\s+/);
    const body: string[] = [];
    let close = index + 1;
    for (; close < lines.length; close++) {
      const line = lines[close] ?? '';
      if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') break;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart());
    }
    const language = LANGUAGES[word.toLowerCase()];
    if (language) {
      const before = lines.slice(0, index).join('\n');
      const lastComment = before.slice(before.lastIndexOf('<!--'));
      snippets.push({
        file,
        line: index + 2,
        language,
        run: flags.includes('run'),
        prelude: PRELUDE.exec(lastComment)?.[1]?.trim() ?? '',
        code: body.join('\n'),
      });
    }
    index = close;
  }
  return snippets;
}

/** A name for the snippet's module file: `packages-cli-README-md-42`. */
export function snippetName(snippet: Snippet): string {
  return `${snippet.file.replace(/[^A-Za-z0-9]+/g, '-')}-${snippet.line}`;
}
