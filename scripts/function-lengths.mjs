// Keeps packages/*/src readable (test files aside): no function over 80 lines (lines from signature
// to closing brace, the longest are listed), no class over 300, and no "self passing" — a call or
// `new` with a bare `this` argument hands a helper the whole object, which then calls back into it.
// Usage: node scripts/function-lengths.mjs [count] [root]   — exits 1 when any rule is broken.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

const FUNCTION_LIMIT = 80;
const CLASS_LIMIT = 300;
const count = Number(process.argv[2] ?? 10);
const root = process.argv[3] ? resolve(process.argv[3]) : new URL('..', import.meta.url).pathname;

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

const functions = [];
const classes = [];
const selfPassing = [];
for (const file of files) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const lineOf = (position) => source.getLineAndCharacterOfPosition(position).line;
  const measure = (node) => {
    const start = lineOf(node.getStart());
    return { lines: lineOf(node.end) - start + 1, where: `${relative(root, file)}:${start + 1}` };
  };
  const nameOf = (node) =>
    node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText() : '<anonymous>');
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body)
      functions.push({ ...measure(node), name: nameOf(node) });
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node))
      classes.push({ ...measure(node), name: nameOf(node) });
    if ((ts.isCallExpression(node) || ts.isNewExpression(node)) && node.arguments) {
      for (const argument of node.arguments) {
        if (argument.kind !== ts.SyntaxKind.ThisKeyword) continue;
        const call = node.getText().split('\n')[0];
        selfPassing.push({ where: `${relative(root, file)}:${lineOf(argument.getStart()) + 1}`, call });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const report = (found, limit, [one, many]) => {
  found.sort((a, b) => b.lines - a.lines);
  const over = found.filter((f) => f.lines > limit);
  for (const f of found.slice(0, Math.max(count, over.length))) {
    console.log(`${String(f.lines).padStart(4)}  ${f.name}  ${f.where}${f.lines > limit ? '  (over)' : ''}`);
  }
  const counted = over.length === 1 ? `1 ${one}` : `${over.length || 'no'} ${many}`;
  console.log(`${counted} over ${limit} lines`);
  return over.length;
};
const longFunctions = report(functions, FUNCTION_LIMIT, ['function', 'functions']);
const longClasses = report(classes, CLASS_LIMIT, ['class', 'classes']);
for (const s of selfPassing) console.log(`self passing  ${s.where}  ${s.call}`);
console.log(
  selfPassing.length === 1 ? '1 call passes a bare this' : `${selfPassing.length || 'no'} calls pass a bare this`,
);
process.exitCode = longFunctions + longClasses + selfPassing.length ? 1 : 0;
