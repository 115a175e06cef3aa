// A sample app that opts in to readiness and the watchdog (docs/app-contract.md): an HTTP server on
// 127.0.0.1:$PORT that says it is ready once it listens, and feeds the watchdog from its event loop.
import http from 'node:http';
import { feedWatchdog, signalReady } from './steward-contract.mjs';

const port = Number(process.env.PORT);
const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.end(req.url === '/healthz' ? 'ok\n' : `hello from ${process.env.STEWARD_APP} ${process.env.STEWARD_VERSION}\n`);
});
const stopFeeding = feedWatchdog();
server.listen(port, '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${port}`);
  signalReady();
});
// steward stops an app with SIGTERM: finish the open requests, then exit.
process.once('SIGTERM', () => {
  stopFeeding();
  server.close(() => process.exit(0));
});
