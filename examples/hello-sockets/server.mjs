// The README's hello app, opted in to the zero-downtime handover (docs/app-contract.md "Sockets"):
// steward binds its socket (apps.hello.sockets in the host config) and passes it as fd 3, as
// systemd does (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES); the app says it is ready with a newline
// on STEWARD_READY_FD and, on SIGTERM, finishes its open requests before it exits. An update then
// starts the new version beside this one on the same socket and stops this one only once the new
// one is ready: no request is refused or cut. Node's built-in modules only.
import { createWriteStream } from 'node:fs';
import http from 'node:http';

const version = process.env.STEWARD_VERSION;

// The sockets steward passed, by name, when LISTEN_PID says they are this process's.
function listenFds() {
  if (process.env.LISTEN_PID !== String(process.pid)) return new Map();
  const n = Number(process.env.LISTEN_FDS ?? 0);
  const names = (process.env.LISTEN_FDNAMES ?? '').split(':');
  return new Map(Array.from({ length: n }, (_, i) => [names[i] || `fd${3 + i}`, 3 + i]));
}

const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.end(req.url === '/healthz' ? 'ok\n' : `hello from ${process.env.STEWARD_APP} ${version}\n`);
});

const fd = listenFds().get('http');
// Without steward's socket (run by hand): listen on $PORT as the plain hello app does.
const where = fd !== undefined ? { fd } : { port: Number(process.env.PORT ?? 18080), host: '127.0.0.1' };
server.listen(where, () => {
  console.log(`hello ${version} serving on ${fd !== undefined ? `steward's socket (fd ${fd})` : `127.0.0.1:${where.port}`}`);
  // Ready: one newline on the readiness fd, once the server accepts.
  const readyFd = Number(process.env.STEWARD_READY_FD);
  if (Number.isInteger(readyFd)) createWriteStream('', { fd: readyFd }).end('\n');
});

// steward stops the old version with SIGTERM once the new one is ready: stop accepting (the
// socket stays open in steward's keeper and the new process), finish what is open, then exit.
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections?.();
});
