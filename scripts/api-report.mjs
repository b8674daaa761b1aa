// The API report of @stepwise/core: every name each public entry exports, with its kind and a
// one-line signature, sorted, in packages/core/api/<entry>.api.md. The reports are checked in, so a
// change to what an entry exports shows in review; packages/core/test/api-report.test.ts
// regenerates them and fails, naming the export, when they differ from the files.
//
//   node scripts/api-report.mjs           rewrites the reports (npm run api:update)
//   node scripts/api-report.mjs --check   exits 1 and lists the differences when they are stale
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CORE = path.join(ROOT, 'packages', 'core');

/** The public entries of @stepwise/core whose names are reported (testing keeps its own shape). */
export const ENTRIES = [
  { entry: '@stepwise/core', source: 'src/index.ts', report: 'api/core.api.md', audience: 'host applications' },
  {
    entry: '@stepwise/core/engine',
    source: 'src/engine.ts',
    report: 'api/engine.api.md',
    audience: 'engine and executor authors',
  },
  { entry: '@stepwise/core/store', source: 'src/store.ts', report: 'api/store.api.md', audience: 'store authors' },
];

const KINDS = [
  [ts.SymbolFlags.Class, 'class'],
  [ts.SymbolFlags.Function, 'function'],
  [ts.SymbolFlags.Enum, 'enum'],
  [ts.SymbolFlags.Variable, 'const'],
  [ts.SymbolFlags.Interface, 'interface'],
  [ts.SymbolFlags.TypeAlias, 'type'],
];
const MAX_SIGNATURE = 200;

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });
/** A node as source without comments, on one line. */
const text = (node) => printer.printNode(ts.EmitHint.Unspecified, node, node.getSourceFile()).replace(/\s+/g, ' ');
const shorten = (text) => (text.length > MAX_SIGNATURE ? `${text.slice(0, MAX_SIGNATURE - 1)}…` : text);

function typeParameters(node) {
  return node.typeParameters ? `<${node.typeParameters.map(text).join(', ')}>` : '';
}

function parameterList(checker, parameters) {
  const shown = parameters.map((parameter) => {
    const optional = parameter.questionToken || parameter.initializer ? '?' : '';
    const type = parameter.type
      ? text(parameter.type)
      : checker.typeToString(checker.getTypeAtLocation(parameter), parameter, ts.TypeFormatFlags.NoTruncation);
    return `${parameter.dotDotDotToken ? '...' : ''}${parameter.name.getText()}${optional}: ${type}`;
  });
  return `(${shown.join(', ')})`;
}

function functionSignature(checker, node) {
  const returns = node.type
    ? text(node.type)
    : checker.typeToString(
        checker.getSignatureFromDeclaration(node).getReturnType(),
        node,
        ts.TypeFormatFlags.NoTruncation,
      );
  return `${typeParameters(node)}${parameterList(checker, node.parameters)}: ${returns}`;
}

/** Member names, optional ones marked: enough to see a member come or go without the whole body. */
function memberNames(members) {
  const names = [];
  for (const member of members) {
    if (ts.isConstructorDeclaration(member) || ts.isIndexSignatureDeclaration(member)) continue;
    const modifiers = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
    if (modifiers.some((modifier) => modifier.kind === ts.SyntaxKind.PrivateKeyword)) continue;
    if (!member.name || ts.isPrivateIdentifier(member.name)) continue;
    const isStatic = modifiers.some((modifier) => modifier.kind === ts.SyntaxKind.StaticKeyword);
    const name = `${isStatic ? 'static ' : ''}${member.name.getText()}${member.questionToken ? '?' : ''}`;
    if (!names.includes(name)) names.push(name);
  }
  return `{ ${names.join('; ')} }`;
}

function heritage(node) {
  return (node.heritageClauses ?? []).map((clause) => ` ${text(clause)}`).join('');
}

function classSignature(checker, node) {
  const construct = node.members.find(ts.isConstructorDeclaration);
  const made = construct ? ` new${parameterList(checker, construct.parameters)}` : '';
  return `${typeParameters(node)}${heritage(node)}${made} ${memberNames(node.members)}`;
}

function constSignature(checker, node) {
  if (node.type) return `: ${text(node.type)}`;
  return `: ${checker.typeToString(checker.getTypeAtLocation(node), node, ts.TypeFormatFlags.NoTruncation)}`;
}

/** The one line that stands for a declaration: its type parameters, parameters, heritage or type. */
function signatureOf(checker, kind, node) {
  if (kind === 'function' && ts.isFunctionDeclaration(node)) return functionSignature(checker, node);
  if (kind === 'class' && ts.isClassDeclaration(node)) return classSignature(checker, node);
  if (kind === 'interface' && ts.isInterfaceDeclaration(node)) {
    return `${typeParameters(node)}${heritage(node)} ${memberNames(node.members)}`;
  }
  if (kind === 'type' && ts.isTypeAliasDeclaration(node)) return `${typeParameters(node)} = ${text(node.type)}`;
  if (kind === 'const' && ts.isVariableDeclaration(node)) return constSignature(checker, node);
  return '';
}

function isInternal(node) {
  const documented = ts.isVariableDeclaration(node) ? node.parent.parent : node;
  return ts.getJSDocTags(documented).some((tag) => tag.tagName.text === 'internal');
}

/** One entry's names: `{ name, kind, signature, internal }`, sorted by name. */
function entryNames(program, checker, source) {
  const file = program.getSourceFile(path.join(CORE, source));
  if (!file) throw new Error(`api-report: ${source} is not in the program`);
  const names = [];
  for (const exported of checker.getExportsOfModule(checker.getSymbolAtLocation(file))) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const found = KINDS.find(([flag]) => symbol.flags & flag);
    const kind = found ? found[1] : 'unknown';
    const node = symbol.declarations?.[0];
    const signature = node ? shorten(signatureOf(checker, kind, node).replace(/\s+/g, ' ').trimEnd()) : '';
    names.push({ name: exported.name, kind, signature, internal: node ? isInternal(node) : false });
  }
  const key = (item) => `${item.name.toLowerCase()} ${item.name}`;
  return names.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** Every entry's names, from core's sources under core's compiler options. */
export function collectApi() {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(CORE, 'tsconfig.json'), {}, ts.sys);
  if (!config) throw new Error('api-report: cannot read packages/core/tsconfig.json');
  const roots = ENTRIES.map((entry) => path.join(CORE, entry.source));
  const program = ts.createProgram(roots, { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  return ENTRIES.map((entry) => ({ ...entry, names: entryNames(program, checker, entry.source) }));
}

const HEADER = '<!-- Generated by scripts/api-report.mjs: do not edit by hand, run `npm run api:update`. -->';

/** The report's text: a header, then one line per name (`kind name signature`) in a ts block. */
export function renderReport({ entry, source, audience, names }) {
  const lines = names.map(
    ({ name, kind, signature, internal }) => `${internal ? '/** @internal */ ' : ''}${kind} ${name}${signature}`,
  );
  return [
    `# ${entry}`,
    '',
    HEADER,
    '',
    `For ${audience}: ${names.length} names, from \`packages/core/${source}\`.`,
    '',
    '```ts',
    ...lines,
    '```',
    '',
  ].join('\n');
}

/** A report's names, read back from its text. */
export function parseReport(text) {
  const names = [];
  for (const line of text.split('\n')) {
    const match = /^(\/\*\* @internal \*\/ )?(class|function|enum|const|interface|type|unknown) ([\w$]+)(.*)$/.exec(
      line,
    );
    if (match) names.push({ name: match[3], kind: match[2], signature: match[4], internal: Boolean(match[1]) });
  }
  return names;
}

/** What differs between a checked-in report and the sources, one sentence per export. */
export function compareNames({ entry, report }, recorded, current) {
  const file = `packages/core/${report}`;
  const update = 'with `npm run api:update`';
  const before = new Map(recorded.map((item) => [item.name, item]));
  const now = new Map(current.map((item) => [item.name, item]));
  const differences = [];
  for (const [name, item] of now) {
    const old = before.get(name);
    if (!old) differences.push(`new export ${name} (${item.kind}) in ${entry}: add it to ${file} ${update}`);
    else if (old.kind !== item.kind) {
      differences.push(
        `${name} in ${entry} changed kind from ${old.kind} to ${item.kind}: record it in ${file} ${update}`,
      );
    } else if (old.signature !== item.signature || old.internal !== item.internal) {
      const was = `${old.internal ? '@internal ' : ''}${old.signature.trim()}`;
      const is = `${item.internal ? '@internal ' : ''}${item.signature.trim()}`;
      differences.push(`${name} in ${entry} changed:\n  was ${was}\n  now ${is}\n  record it in ${file} ${update}`);
    }
  }
  for (const [name, item] of before) {
    if (!now.has(name)) {
      differences.push(`${name} (${item.kind}) is no longer exported by ${entry}: remove it from ${file} ${update}`);
    }
  }
  return differences;
}

function main() {
  const check = process.argv.includes('--check');
  let differences = [];
  for (const entry of collectApi()) {
    const file = path.join(CORE, entry.report);
    if (check) {
      differences = differences.concat(compareNames(entry, parseReport(readFileSync(file, 'utf8')), entry.names));
    } else {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, renderReport(entry));
      console.log(`${path.relative(ROOT, file)}: ${entry.names.length} names`);
    }
  }
  if (differences.length > 0) {
    console.error(differences.join('\n'));
    process.exitCode = 1;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
