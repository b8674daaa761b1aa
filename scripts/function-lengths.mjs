// Lists the longest functions in packages/*/src (lines from signature to closing brace).
// Usage: node scripts/function-lengths.mjs [count]   — exits 1 when any is over the limit.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const LIMIT = 120;
const root = new URL('..', import.meta.url).pathname;
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (/\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name)) files.push(path);
  }
};
for (const pkg of readdirSync(join(root, 'packages'))) {
  try {
    walk(join(root, 'packages', pkg, 'src'));
  } catch {}
}
const found = [];
for (const file of files) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.end).line;
      const name =
        node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText() : '<anonymous>');
      found.push({ lines: end - start + 1, where: `${relative(root, file)}:${start + 1}`, name });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
found.sort((a, b) => b.lines - a.lines);
const count = Number(process.argv[2] ?? 10);
for (const f of found.slice(0, count)) console.log(`${String(f.lines).padStart(4)}  ${f.name}  ${f.where}`);
const over = found.filter((f) => f.lines > LIMIT);
console.log(over.length ? `${over.length} functions over ${LIMIT} lines` : `no function over ${LIMIT} lines`);
process.exitCode = over.length ? 1 : 0;
