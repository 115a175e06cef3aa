import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { assertStillAnswers, finalLine, rawExchange, startTestServers, type TestServers } from '../helpers/api-server-harness.js';

let s: TestServers;
before(async () => (s = await startTestServers({ idleTimeoutMs: 300 })));
after(() => s.close());

test('half a request line and then silence is closed with "idle timeout" after idleTimeoutMs', async () => {
  const a = await rawExchange(s.helperSock, '{"v":1,"id":1,"op":"sta');
  const line = finalLine(a);
  assert.equal(line.error.code, 'BAD_REQUEST');
  assert.match(line.error.message, /idle timeout/);
  assert.ok(a.ms >= 250 && a.ms < 3000, `closed after ${a.ms} ms`);
  await assertStillAnswers(s);
});

test('a connection that sends nothing at all is closed after idleTimeoutMs', async () => {
  const a = await rawExchange(s.adminSock, '');
  assert.match(finalLine(a).error.message, /idle timeout/);
  await assertStillAnswers(s);
});

test('an upload that stalls half way is closed with "idle timeout"', async () => {
  const req = JSON.stringify({ v: 1, id: 2, op: 'stage', app: 'web', version: '1.0.0', upload: 1000 }) + '\n';
  const a = await rawExchange(s.adminSock, req + 'x'.repeat(500));
  const line = finalLine(a);
  assert.equal(line.error.code, 'BAD_REQUEST');
  assert.match(line.error.message, /idle timeout/);
  await assertStillAnswers(s);
});

test('a slow op is not cut by the idle timeout', async () => {
  const slow = await startTestServers({ idleTimeoutMs: 300 }, {
    status: async () => {
      await new Promise((r) => setTimeout(r, 800));
      return { helper: 'up' };
    },
  });
  try {
    const sock = net.createConnection(slow.adminSock);
    await new Promise((r) => sock.once('connect', r));
    sock.destroy();
    const a = await rawExchange(slow.adminSock, '{"v":1,"id":3,"op":"status"}\n');
    assert.deepEqual(finalLine(a), { id: 3, ok: true, result: { helper: 'up' } });
  } finally {
    await slow.close();
  }
});
