// The documentation site's TypeDoc plugin (typedoc.json, so `npm run docs` and docs/test alike):
// - a ```mermaid block becomes a diagram, drawn in the page by the copy of mermaid the site carries
//   (assets/mermaid.min.js, from docs/test's devDependency: no CDN, the site works offline);
// - a heading's code (### `stepwise run`) stays in its anchor and in "On this page": TypeDoc takes
//   a heading's text from its text tokens only, so code is written as <code> and a text token.
import { copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Application, JSX, RendererEvent } from 'typedoc';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MERMAID_ASSET = 'assets/mermaid.min.js';

/** @param {import('markdown-it').default} parser */
function keepCodeInHeadings(parser) {
  parser.core.ruler.push('stepwise_heading_code', (state) => {
    state.tokens.forEach((token, index) => {
      const inline = state.tokens[index + 1];
      if (token.type !== 'heading_open' || !inline?.children) return;
      inline.children = inline.children.flatMap((child) => {
        if (child.type !== 'code_inline') return [child];
        const open = new state.Token('html_inline', '', 0);
        open.content = '<code>';
        const text = new state.Token('text', '', 0);
        text.content = child.content;
        const close = new state.Token('html_inline', '', 0);
        close.content = '</code>';
        return [open, text, close];
      });
    });
  });
}

/** @param {import('markdown-it').default} parser */
function mermaidBlocksAsDiagrams(parser) {
  const fence = parser.renderer.rules.fence;
  if (!fence) throw new Error('markdown-it has no fence renderer to wrap');
  parser.renderer.rules.fence = (tokens, index, options, env, self) => {
    const token = tokens[index];
    if (token?.info.trim() !== 'mermaid') return fence(tokens, index, options, env, self);
    return `<pre class="mermaid">${parser.utils.escapeHtml(token.content)}</pre>\n`;
  };
}

/**
 * Loads mermaid only on a page that has a diagram, in TypeDoc's colour theme, once the page is
 * shown: TypeDoc hides the body until its script has run, and mermaid measures text to lay out.
 */
function diagramScript(mermaidUrl) {
  return `(() => {
  if (!document.querySelector('pre.mermaid')) return;
  const script = document.createElement('script');
  script.src = ${JSON.stringify(mermaidUrl)};
  script.onload = () => {
    const theme = document.documentElement.dataset.theme;
    const dark = theme === 'dark' || (theme !== 'light' && matchMedia('(prefers-color-scheme: dark)').matches);
    window.mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: dark ? 'dark' : 'default' });
    const draw = () => {
      if (document.body.style.display === 'none') return requestAnimationFrame(draw);
      window.mermaid.run({ querySelector: 'pre.mermaid' });
    };
    draw();
  };
  document.head.append(script);
})();`;
}

/** @param {Application} app */
export function load(app) {
  app.on(Application.EVENT_BOOTSTRAP_END, () => {
    const loader = app.options.getValue('markdownItLoader');
    app.options.setValue('markdownItLoader', (parser) => {
      loader(parser);
      keepCodeInHeadings(parser);
      mermaidBlocksAsDiagrams(parser);
    });
  });
  app.renderer.hooks.on('body.end', (context) =>
    JSX.createElement(
      'script',
      null,
      JSX.createElement(JSX.Raw, { html: diagramScript(context.relativeURL(MERMAID_ASSET)) }),
    ),
  );
  app.renderer.on(RendererEvent.END, (event) => {
    // mermaid is a devDependency of docs/test; resolved from there, wherever npm put it.
    const mermaid = createRequire(path.join(ROOT, 'docs', 'test', 'package.json')).resolve(
      'mermaid/dist/mermaid.min.js',
    );
    copyFileSync(mermaid, path.join(event.outputDirectory, MERMAID_ASSET));
  });
}
