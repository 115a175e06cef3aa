import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertStillAnswers, finalLine, rawExchange, startTestServers, type TestServers } from '../helpers/api-server-harness.js';

let s: TestServers;
before(async () => (s = await startTestServers()));
after(() => s.close());

test('10 MB without a newline is refused once 64 KiB pass, without the helper reading the rest', async () => {
  const a = await rawExchange(s.helperSock, Buffer.alloc(10 * 1024 * 1024, 0x61));
  const line = finalLine(a);
  assert.equal(line.error.code, 'BAD_REQUEST');
  assert.match(line.error.message, /longer than 65536 bytes/);
  // The helper closed before taking the 10 MB: the client's write could not complete.
  assert.equal(a.writeOk, false, 'the whole 10 MB was accepted by the helper');
  const read = s.logs.map((m) => /after reading (\d+) bytes/.exec(m)?.[1]).filter(Boolean).map(Number);
  assert.equal(read.length, 1, s.logs.join('\n'));
  console.log(`# helper read ${read[0]} of ${10 * 1024 * 1024} bytes before refusing`);
  assert.ok(read[0]! <= 2 * 64 * 1024 + 65536, `helper read ${read[0]} bytes`);
  await assertStillAnswers(s);
});
