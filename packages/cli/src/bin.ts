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
        process.stderr.write(`stepwise: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
        process.exitCode = 1;
      },
    );
}
