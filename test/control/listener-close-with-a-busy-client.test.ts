import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { listen } from '../../src/control/server/listen.js';

// A steward-control listener closing (SIGTERM to serve) while a client keeps its connection busy:
// an agent heartbeating every 2 s reuses one keep-alive connection (5 s), so it is never idle when
// server.close() drops the idle ones. On Node 20 that close() then did not end until the client
// stopped: serve took minutes to stop in test/e2e/systemd/install.test.ts. Now the answers after
// close() say `connection: close`, and close() ends while the client is still sending.

test('close() asked while an answer is in flight ends while the keep-alive client goes on sending; the answers after it close their connection', { timeout: 30_000 }, async () => {
  let l: Awaited<ReturnType<typeof listen>> | null = null;
  let closed: Promise<boolean> | null = null;
  const server = http.createServer((req, res) => {
    // The close comes while this answer is in flight: the connection is not idle then.
    if (req.url === '/close' && !closed) closed = Promise.race([l!.close().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 3_000))]);
    setTimeout(() => res.end('ok'), 5);
  });
  l = await listen(server, '127.0.0.1', 0, false);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const ask = (p: string) =>
    new Promise<string>((resolve) => {
      const req = http.get(`${l!.url}${p}`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.headers.connection)));
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code}`));
    });
  try {
    for (let i = 0; i < 3; i++) assert.equal(await ask('/'), 'keep-alive');
    await ask('/close');
    // The client goes on as an agent does, every 50 ms on its kept connection, until refused.
    const after: string[] = [];
    for (let i = 0; i < 60 && !after.at(-1)?.startsWith('error'); i++) {
      after.push(await ask('/'));
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(await closed, true, `close() ended while the client kept sending (answers after it: ${after.join(', ')})`);
    assert.deepEqual(after.slice(0, -1).filter((c) => c !== 'close'), [], `every answer after close() closes its connection: ${after.join(', ')}`);
    assert.match(after.at(-1)!, /^error ECONNREFUSED$/, 'then the listener is gone');
  } finally {
    agent.destroy();
  }
});
