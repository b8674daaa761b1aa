/**
 * `el(tag, className, text)`: an element with its class and its text (set as text, never as HTML).
 * The source of a function the page scripts (the report's, the runs list's, the run page's) embed,
 * since the pages load no shared module.
 */
export const ELEMENT_FUNCTION = `function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }`;
