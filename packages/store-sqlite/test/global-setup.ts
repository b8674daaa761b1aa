import { fileURLToPath } from 'node:url';
import { buildIfStale } from '../../../scripts/build-if-stale.js';

/** The process tests import the package's `dist`: build it first when it is stale. */
export default function setup(): void {
  buildIfStale(fileURLToPath(new URL('..', import.meta.url)));
}
