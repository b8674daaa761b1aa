import { readFileSync } from 'node:fs';

/** The installed package's version (`stepwise --version`). */
export function version(): string {
  try {
    const file = new URL('../package.json', import.meta.url);
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
