import { ignoreBrokenPipes } from './broken-pipe.js';
import { version } from './version.js';

// `stepwise run --json | head`: the run goes on to its end (and its exit code) after head exits.
ignoreBrokenPipes([process.stdout, process.stderr]);

const argv = process.argv.slice(2);
if (argv[0] === '--version' || argv[0] === '-v') {
  // Answered before the commands are loaded, and with them core and the dashboard: about a tenth
  // of a second the version does not need.
  process.stdout.write(`${version()}\n`);
} else {
  import('./main.js')
    .then(({ main }) => main(argv))
    .then(
      (code) => {
        process.exitCode = code;
      },
      (error: unknown) => {
        process.stderr.write(`stepwise: ${lastWords(error)}\n`);
        process.exitCode = 1;
      },
    );
}

/**
 * The text of what ended the CLI, never throwing (a value without a prototype has no text). Not
 * core's `messageOf`: this file loads without core, and keeps the stack.
 */
function lastWords(error: unknown): string {
  try {
    return error instanceof Error ? (error.stack ?? error.message) : String(error);
  } catch {
    return '(a thrown value that cannot be shown as text)';
  }
}
