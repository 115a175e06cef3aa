import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertStillAnswers, finalLine, rawExchange, startTestServers, type TestServers } from '../helpers/api-server-harness.js';

let s: TestServers;
before(async () => (s = await startTestServers()));
after(() => s.close());

const stage = (upload: number) => JSON.stringify({ v: 1, id: 'u', op: 'stage', app: 'web', version: '1.0.0', upload }) + '\n';

test('an upload that ends before its announced size gets BAD_REQUEST naming the byte counts', async () => {
  const a = await rawExchange(s.adminSock, stage(1000) + 'x'.repeat(400), { end: true });
  const line = finalLine(a);
  assert.equal(line.error.code, 'BAD_REQUEST');
  assert.equal(line.error.message, 'upload ended after 400 of 1000 bytes');
  await assertStillAnswers(s);
});

test('an upload with bytes beyond its announced size gets BAD_REQUEST', async () => {
  const line = finalLine(await rawExchange(s.adminSock, stage(10) + 'y'.repeat(11), { end: true }));
  assert.equal(line.error.code, 'BAD_REQUEST');
  assert.match(line.error.message, /longer than the announced 10 bytes/);
  await assertStillAnswers(s);
});

test('a complete upload reaches the handler byte for byte', async () => {
  const line = finalLine(await rawExchange(s.adminSock, stage(300_000) + 'z'.repeat(300_000), { end: true }));
  assert.deepEqual(line, { id: 'u', ok: true, result: { bytes: 300_000 } });
});
