// What installing a package costs a user: packs every workspace package (or takes the tarballs in
// --tarballs DIR), installs the chosen package from its tarball in a fresh project (its @stepwise
// dependencies from their tarballs, everything else from the npm registry) and prints how many
// packages landed in node_modules and how many bytes they take.
//
//   node scripts/measure-install.mjs [@stepwise/cli] [--tarballs DIR] [--keep]
//
// Install scripts are skipped (better-sqlite3 would compile for minutes): the figures are the
// installed files, without a compiled native addon.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name) => {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
};
const target =
  args.find((arg, index) => !arg.startsWith('--') && !args[index - 1]?.startsWith('--')) ?? '@stepwise/cli';

/** Packs every package under packages/ into `directory`; returns name → tarball path. */
export function packAll(directory) {
  mkdirSync(directory, { recursive: true });
  const tarballs = new Map();
  for (const entry of readdirSync(path.join(ROOT, 'packages'))) {
    const folder = path.join(ROOT, 'packages', entry);
    const output = execFileSync('npm', ['pack', '--json', '--pack-destination', directory], {
      cwd: folder,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [packed] = JSON.parse(output);
    const missing = missingTargets(folder, new Set(packed.files.map((file) => file.path)));
    if (missing.length > 0) {
      throw new Error(
        `the tarball of ${packed.name} lacks ${missing.join(', ')}, which its package.json points to: build the packages first (or wait for the build that is running)`,
      );
    }
    tarballs.set(packed.name, path.join(directory, packed.filename));
  }
  return tarballs;
}

/** The files a package.json's main, module, types, bin and exports name that are not in `files`. */
export function missingTargets(folder, files) {
  const manifest = JSON.parse(readFileSync(path.join(folder, 'package.json'), 'utf8'));
  const targets = [];
  const collect = (value) => {
    if (typeof value === 'string') targets.push(value);
    else if (value && typeof value === 'object') for (const child of Object.values(value)) collect(child);
  };
  collect([manifest.main, manifest.module, manifest.types, manifest.bin, manifest.exports]);
  const named = targets.filter((target) => !target.includes('*')).map((target) => path.posix.normalize(target));
  return [...new Set(named)].filter((target) => !files.has(target));
}

function tarballsIn(directory) {
  const tarballs = new Map();
  for (const file of readdirSync(directory).filter((name) => name.endsWith('.tgz'))) {
    const manifest = execFileSync('tar', ['-xOzf', path.join(directory, file), 'package/package.json'], {
      encoding: 'utf8',
    });
    tarballs.set(JSON.parse(manifest).name, path.join(directory, file));
  }
  return tarballs;
}

function manifestOf(tarball) {
  return JSON.parse(execFileSync('tar', ['-xOzf', tarball, 'package/package.json'], { encoding: 'utf8' }));
}

/** The tarballs installing `name` needs: itself and its @stepwise dependencies, transitively. */
export function closure(name, tarballs) {
  const needed = new Set();
  const visit = (current) => {
    if (needed.has(current)) return;
    const tarball = tarballs.get(current);
    if (!tarball) throw new Error(`no tarball for ${current}`);
    needed.add(current);
    for (const dependency of Object.keys(manifestOf(tarball).dependencies ?? {}))
      if (dependency.startsWith('@stepwise/')) visit(dependency);
  };
  visit(name);
  return [...needed].map((current) => tarballs.get(current));
}

/** How many packages a node_modules folder holds and how many bytes its files take. */
export function sizeOf(folder) {
  let bytes = 0;
  let packages = 0;
  const walk = (directory) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const full = path.join(directory, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        bytes += statSync(full).size;
        if (entry.name === 'package.json' && /node_modules[\\/](@[^\\/]+[\\/])?[^\\/@]+$/.test(directory)) packages++;
      }
    }
  };
  walk(folder);
  return { bytes, packages };
}

/** `sizeOf`'s figures as one reads them: "123 packages, 45.6 MB in node_modules". */
export function describeSize({ bytes, packages }) {
  return `${packages} packages, ${(bytes / 1e6).toFixed(1)} MB in node_modules`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'stepwise-install-size-'));
  try {
    const tarballs = option('--tarballs')
      ? tarballsIn(path.resolve(option('--tarballs')))
      : packAll(path.join(scratch, 'tarballs'));
    const project = path.join(scratch, 'project');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'fresh', private: true }));
    const install = closure(target, tarballs);
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', ...install], {
      cwd: project,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const tarballBytes = install.reduce((sum, file) => sum + statSync(file).size, 0);
    console.log(
      `${target}: ${describeSize(sizeOf(path.join(project, 'node_modules')))}; ` +
        `${install.length} Stepwise tarballs, ${(tarballBytes / 1e3).toFixed(0)} kB packed`,
    );
  } finally {
    if (!args.includes('--keep')) rmSync(scratch, { recursive: true, force: true });
    else console.log(`kept ${scratch}`);
  }
}
