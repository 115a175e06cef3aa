import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertStillAnswers, finalLine, rawExchange, startTestServers, type TestServers } from '../helpers/api-server-harness.js';

let s: TestServers;
before(async () => (s = await startTestServers()));
after(() => s.close());

test('a request line that is not JSON gets a BAD_REQUEST line and the helper keeps answering', async () => {
  for (const garbage of ['{"v":1,"id":1,"op":"status"\n', 'not json at all\n', '\u0000\u00ff\u0001\n', '[1,2\n']) {
    const a = await rawExchange(s.helperSock, garbage, { end: true });
    const line = finalLine(a);
    assert.equal(line.ok, false);
    assert.equal(line.error.code, 'BAD_REQUEST');
    assert.match(line.error.message, /not valid JSON/);
    assert.equal(line.id, null);
  }
  await assertStillAnswers(s);
});

test('JSON that is not a request object gets a BAD_REQUEST line naming the bad field', async () => {
  for (const [text, field] of [['null', '(top level)'], ['42', '(top level)'], ['{"v":2,"id":1,"op":"status"}', 'v'], ['{"v":1,"op":"status"}', 'id']] as const) {
    const line = finalLine(await rawExchange(s.adminSock, text + '\n', { end: true }));
    assert.equal(line.error.code, 'BAD_REQUEST', text);
    assert.ok(line.error.message.includes(field), `${text}: ${line.error.message}`);
  }
  await assertStillAnswers(s);
});

test('a handler that throws a plain Error is answered INTERNAL and the helper lives', async () => {
  const line = finalLine(await rawExchange(s.adminSock, '{"v":1,"id":"r","op":"releases","app":"web"}\n', { end: true }));
  assert.equal(line.id, 'r');
  assert.equal(line.error.code, 'INTERNAL');
  assert.match(line.error.message, /boom/);
  await assertStillAnswers(s);
});
