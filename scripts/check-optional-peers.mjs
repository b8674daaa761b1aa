// Optional peers stay optional: for every package under packages/, reads its package.json and its
// built dist/ (run after the build) and fails, one line per problem with the file and line, when
//   - a peer dependency is required (not `optional` in peerDependenciesMeta) and not listed in
//     REQUIRED_PEERS below: npm installs required peers for every user, and fails when it cannot;
//   - peerDependenciesMeta names a package that is not a peer, or a package is both a dependency
//     and a peer;
//   - a compiled module (.js, .cjs) imports or requires, when it loads, a package that is not one
//     of its dependencies (an optional peer, a devDependency): loading it throws for users without
//     that package. `import()` inside a function is how an optional peer is loaded on demand;
//   - a declaration file (.d.ts, .d.cts) names such a package at all (import, export … from,
//     `import('x').Type`, a types reference): TypeScript users without it get TS2307.
//
//   node scripts/check-optional-peers.mjs        (exits 1 if any problem is found)
//
// The packed-install check (check-packed-packages.mjs) proves the same by installing; this one is
// fast and names the exact file.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { missingTargets } from './measure-install.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Peers every user of the package must install; each entry says why. */
const REQUIRED_PEERS = {
  // The host's own OpenTelemetry API: spans must go to the tracer provider the host registered,
  // which a second copy of the API (a dependency) would not see. Without it the package has no use.
  '@stepwise/opentelemetry': ['@opentelemetry/api'],
};

/** Entry points made for one optional peer, which they may therefore import at load. */
const ENTRY_PEERS = {
  // `@stepwise/core/testing/vitest`: the store conformance suite as vitest tests.
  '@stepwise/core': { 'testing/vitest': ['vitest'] },
};

const builtins = new Set(builtinModules);

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`; relative paths and builtins → undefined. */
function packageName(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  return builtins.has(name) ? undefined : name;
}

function stringArgument(call) {
  const [first] = call.arguments;
  return first && ts.isStringLiteralLike(first) ? first.text : undefined;
}

/**
 * The modules a compiled file loads, each `{ specifier, line, atLoad }`: `atLoad` for static
 * imports and for `require()` / `import()` outside any function (run when the file loads).
 */
function moduleReferences(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = [];
  const add = (specifier, node, atLoad) =>
    found.push({ specifier, atLoad, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
  const visit = (node, insideFunction) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteralLike(node.moduleSpecifier)) add(node.moduleSpecifier.text, node, true);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expression = node.moduleReference.expression;
      if (ts.isStringLiteralLike(expression)) add(expression.text, node, true);
    } else if (ts.isImportTypeNode(node)) {
      const argument = node.argument;
      if (ts.isLiteralTypeNode(argument) && ts.isStringLiteralLike(argument.literal)) {
        add(argument.literal.text, node, true);
      }
    } else if (ts.isCallExpression(node)) {
      const isImport = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      const specifier = isImport || isRequire ? stringArgument(node) : undefined;
      if (specifier !== undefined) add(specifier, node, !insideFunction);
    }
    ts.forEachChild(node, (child) => visit(child, insideFunction || ts.isFunctionLike(node)));
  };
  visit(source, false);
  for (const reference of source.typeReferenceDirectives) {
    found.push({
      specifier: reference.fileName,
      atLoad: true,
      line: source.getLineAndCharacterOfPosition(reference.pos).line + 1,
    });
  }
  return found;
}

/** The source file tsup compiled line `line` from: the `// src/…` comment above it, when there is one. */
function sourceOf(text, line) {
  const lines = text.split('\n').slice(0, line).reverse();
  const comment = lines.find((candidate) => /^\/\/ src\/\S+$/.test(candidate));
  return comment ? ` (${comment.slice(3)})` : '';
}

function filesUnder(directory) {
  const files = [];
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) files.push(...filesUnder(full));
    else files.push(full);
  }
  return files;
}

function checkManifest(manifest, relativeFile, problems) {
  const peers = manifest.peerDependencies ?? {};
  const meta = manifest.peerDependenciesMeta ?? {};
  const dependencies = manifest.dependencies ?? {};
  for (const name of Object.keys(meta)) {
    if (!(name in peers)) problems.push(`${relativeFile}: peerDependenciesMeta names ${name}, which is not a peer`);
  }
  for (const name of Object.keys(peers)) {
    if (name in dependencies) problems.push(`${relativeFile}: ${name} is both a dependency and a peer dependency`);
    if (meta[name]?.optional === true || REQUIRED_PEERS[manifest.name]?.includes(name)) continue;
    problems.push(
      `${relativeFile}: the peer dependency ${name} is required (not optional in peerDependenciesMeta): npm installs it for every user of ${manifest.name}, and the install fails where it cannot. Mark it { "optional": true } and load it on demand, or make it a dependency`,
    );
  }
}

/** Problems of one package; `counts` collects how many files were read. */
function checkPackage(folder, counts) {
  const problems = [];
  const manifestFile = path.join(folder, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  checkManifest(manifest, path.relative(ROOT, manifestFile), problems);
  const dist = path.join(folder, 'dist');
  const built = existsSync(dist) ? filesUnder(dist) : [];
  // A partial build would pass vacuously: every file the package.json points to must be there.
  const missing = missingTargets(
    folder,
    new Set(['package.json', ...built.map((file) => path.relative(folder, file))]),
  );
  if (missing.length > 0) {
    return [...problems, `${manifest.name} lacks ${missing.join(', ')}: build the packages first`];
  }
  const loadable = new Set([
    manifest.name,
    ...Object.keys(manifest.dependencies ?? {}),
    ...(REQUIRED_PEERS[manifest.name] ?? []),
  ]);
  const declared = new Set([...loadable, ...Object.keys(manifest.peerDependencies ?? {})]);
  const optional = new Set(Object.keys(manifest.peerDependencies ?? {}).filter((name) => !loadable.has(name)));
  for (const file of built.filter((name) => /\.(c|m)?js$|\.d\.(c|m)?ts$/.test(name))) {
    counts.files++;
    const relative = path.relative(ROOT, file);
    const entry = path.relative(dist, file).replace(/\.d\.(c|m)?ts$|\.(c|m)?js$/, '');
    const allowed = new Set([...loadable, ...(ENTRY_PEERS[manifest.name]?.[entry] ?? [])]);
    const isDeclaration = /\.d\.(c|m)?ts$/.test(file);
    const text = readFileSync(file, 'utf8');
    for (const { specifier, line, atLoad } of moduleReferences(file, text)) {
      const name = packageName(specifier);
      if (name === undefined || allowed.has(name)) continue;
      const what = optional.has(name) ? `${name}, an optional peer of ${manifest.name}` : `${name}, not a dependency`;
      if (isDeclaration) {
        problems.push(
          `${relative}:${line}: the types name ${what}: TypeScript users without it get TS2307. Declare the types needed in ${manifest.name} instead`,
        );
      } else if (atLoad) {
        problems.push(
          `${relative}:${line}${sourceOf(text, line)}: loading the module imports ${what}, so it throws for users without it. Import it where it is needed (await import('${name}'))`,
        );
      } else if (!declared.has(name)) {
        problems.push(
          `${relative}:${line}: imports ${name}, which ${manifest.name} does not declare (dependency or peer)`,
        );
      }
    }
  }
  return problems;
}

const counts = { files: 0, packages: 0 };
const problems = [];
for (const entry of readdirSync(path.join(ROOT, 'packages')).sort()) {
  const folder = path.join(ROOT, 'packages', entry);
  if (!existsSync(path.join(folder, 'package.json'))) continue;
  counts.packages++;
  problems.push(...checkPackage(folder, counts));
}
for (const problem of problems) console.log(`FAIL ${problem}`);
if (problems.length === 0) {
  console.log(
    `ok   optional peers: ${counts.packages} packages, ${counts.files} built files; every peer optional (or listed as required), none loaded at import time or named in the types`,
  );
}
process.exit(problems.length === 0 ? 0 : 1);
