import { packageTestConfig } from '../../vitest.package.js';

export default packageTestConfig(
  {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      // The CLI tests start real processes (and Chromium); a loaded 2-core machine needs headroom.
      testTimeout: 60_000,
      hookTimeout: 60_000,
      // Test files mostly wait for child processes, so a few run side by side even on 2 cores.
      maxWorkers: 3,
      globalSetup: ['../../scripts/build-if-stale.ts'],
    },
  },
  {
    fullOnly: [
      // The built `stepwise` binary in a child process: every test/cli-*.test.ts, and the others that use
      // runCli, startCli, useCliWorkspace or BIN from test/helpers.ts.
      'test/cli-*.test.ts',
      'test/security-redaction.test.ts',
      'test/show-revisions.test.ts',
      'test/solve.test.ts',
      'test/solve-resume.test.ts',
      // Hosts that import the built packages, killed mid-run or serving a page.
      'test/engine-conformance.test.ts',
      'test/security-orphans.test.ts',
      'test/example-approval-host.test.ts',
      // Chromium (the HTML reports) and tmux.
      'test/report*.test.ts',
      'test/live-view-wide-characters.test.ts',
      'test/tty.test.ts',
    ],
  },
);
