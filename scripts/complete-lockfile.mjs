// Adds lockfile entries for platform-specific optional packages (darwin/win32/… builds of
// esbuild, rollup, biome, turbo) that the registry mirror here does not serve. Without them,
// `npm ci` on a fresh clone refuses the lockfile as "out of sync". The entries carry `os`/`cpu`,
// so npm skips them on other platforms without fetching anything. Run after `npm install`.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = ['darwin', 'linux', 'win32', 'freebsd', 'openbsd', 'netbsd', 'android', 'sunos', 'aix', 'openharmony'];
const CPU = {
  x64: 'x64',
  64: 'x64',
  arm64: 'arm64',
  aarch64: 'arm64',
  arm: 'arm',
  ia32: 'ia32',
  32: 'ia32',
  ppc64: 'ppc64',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips64el: 'mips64el',
};

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.map((part) => (part === 'windows' ? 'win32' : part)).find((part) => OS.includes(part));
  const cpu = parts.map((part) => CPU[part]).find(Boolean);
  const libc = parts.includes('musl')
    ? 'musl'
    : parts.includes('gnu') || parts.includes('gnueabihf')
      ? 'glibc'
      : undefined;
  return { os, cpu, libc };
}

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
let added = 0;
for (const [location, entry] of Object.entries(lock.packages)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const { os, cpu, libc } = platformOf(name);
    if (!os || !/^\d+\.\d+\.\d+/.test(spec)) continue;
    // npm resolves from the dependent's folder upwards; the package lands beside it or hoisted.
    const candidates = [];
    for (let base = location; ; base = base.slice(0, base.lastIndexOf('/node_modules/'))) {
      candidates.push(`${base ? `${base}/` : ''}node_modules/${name}`);
      if (!base.includes('/node_modules/')) {
        if (base) candidates.push(`node_modules/${name}`);
        break;
      }
    }
    if (candidates.some((candidate) => lock.packages[candidate]?.version === spec)) continue;
    // Hoisted when the root slot is free, else beside the package that wants it.
    const target = lock.packages[`node_modules/${name}`]
      ? `${location ? `${location}/` : ''}node_modules/${name}`
      : `node_modules/${name}`;
    if (lock.packages[target]) continue;
    lock.packages[target] = {
      version: spec,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      os: [os],
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc ? { libc: [libc] } : {}),
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} platform entries`);
