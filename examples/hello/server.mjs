// The sample app of the README's "Try it by hand": an HTTP server on 127.0.0.1:$PORT with a
// health endpoint, using only Node's built-in modules (a release carries what it needs).
import http from 'node:http';

const port = Number(process.env.PORT);
const version = process.env.STEWARD_VERSION;

const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.end(req.url === '/healthz' ? 'ok\n' : `hello from ${process.env.STEWARD_APP} ${version}\n`);
});
server.listen(port, '127.0.0.1', () => console.log(`hello ${version} listening on 127.0.0.1:${port}`));
// steward stops an app with SIGTERM: finish the open requests, then exit.
process.once('SIGTERM', () => server.close(() => process.exit(0)));
