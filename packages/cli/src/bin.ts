import { ignoreBrokenPipes } from './broken-pipe.js';
import { main } from './main.js';

// `stepwise run --json | head`: the run goes on to its end (and its exit code) after head exits.
ignoreBrokenPipes([process.stdout, process.stderr]);

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`stepwise: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
