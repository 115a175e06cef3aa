import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertStillAnswers, finalLine, rawExchange, startTestServers, type TestServers } from '../helpers/api-server-harness.js';

let s: TestServers;
before(async () => (s = await startTestServers()));
after(() => s.close());

test('an unknown op gets BAD_REQUEST "unknown op" on both sockets', async () => {
  for (const sock of [s.adminSock, s.helperSock]) {
    for (const op of ['shutdown', '__proto__', 'constructor', '']) {
      const line = finalLine(await rawExchange(sock, JSON.stringify({ v: 1, id: 7, op }) + '\n', { end: true }));
      assert.equal(line.id, 7);
      assert.equal(line.error.code, 'BAD_REQUEST');
      assert.match(line.error.message, /unknown op/);
    }
  }
  await assertStillAnswers(s);
});

test('a known op this helper does not implement yet gets BAD_REQUEST "not supported"', async () => {
  const line = finalLine(await rawExchange(s.adminSock, '{"v":1,"id":8,"op":"restart","app":"web"}\n', { end: true }));
  assert.equal(line.error.code, 'BAD_REQUEST');
  assert.match(line.error.message, /not supported by this helper/);
  await assertStillAnswers(s);
});
