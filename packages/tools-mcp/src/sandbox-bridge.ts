/** Where the host's egress proxy socket appears inside the sandbox (read-only, in its private /tmp). */
export const EGRESS_SOCKET = '/tmp/.stepwise-egress.sock';

/**
 * Runs inside the sandbox with this process's Node (`node -e`), in front of the server: listens
 * on 127.0.0.1 of the sandbox's own network namespace, passes every connection to the egress
 * socket, and starts the server (`argv[2…]`) with its stdio and the proxy variables pointing at
 * that port. It exits as the server does; the pid namespace ends the server should it die.
 * Plain CommonJS, no dependencies: it must run from a string wherever the package is installed.
 */
export const BRIDGE_SOURCE = `
const net = require('node:net');
const { spawn } = require('node:child_process');
const [socketPath, command, ...args] = process.argv.slice(1);
const bridge = net.createServer((client) => {
  const upstream = net.connect(socketPath);
  const end = () => { client.destroy(); upstream.destroy(); };
  for (const side of [client, upstream]) { side.on('error', end); side.on('close', end); }
  client.pipe(upstream).pipe(client);
});
bridge.listen(0, '127.0.0.1', () => {
  const proxy = 'http://127.0.0.1:' + bridge.address().port;
  const env = { ...process.env, NODE_USE_ENV_PROXY: '1', NO_PROXY: '', no_proxy: '' };
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) { env[name] = proxy; env[name.toLowerCase()] = proxy; }
  const server = spawn(command, args, { stdio: 'inherit', env });
  server.on('error', (error) => { process.stderr.write('stepwise sandbox: ' + command + ': ' + error.message + '\\n'); process.exit(127); });
  server.on('exit', (code, signal) => process.exit(code ?? 128 + (require('node:os').constants.signals[signal] ?? 0)));
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => server.kill(signal));
});
`;

/** The command that runs `file args` behind the bridge (after bubblewrap's `--`). */
export function bridgedCommand(file: string, args: readonly string[]): string[] {
  return [process.execPath, '-e', BRIDGE_SOURCE, EGRESS_SOCKET, file, ...args];
}
