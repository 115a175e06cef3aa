// Whatever arrives, the server answers with the contract's error body and keeps serving.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ENROLL_PATH, errorAnswerSchema, HEARTBEAT_PATH, MAX_BODY_BYTES } from '../../src/core/control-api.js';
import { FakeNode, request, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
before(async () => {
  c = await startControlInProcess();
});
after(() => c.close());

const garbage: Array<string | Buffer> = ['', 'null', '[]', '1', '"x"', '{}', '{"payload":"!!","sig":"x","keyId":"0123456789abcdef"}', Buffer.from([0xff, 0xfe, 0x00]), '{"payload":"bnVsbA==","sig":"' + 'A'.repeat(88) + '","keyId":"0123456789abcdef"}'];

for (const p of [ENROLL_PATH, HEARTBEAT_PATH]) {
  test(`garbage bodies on ${p} are answered 400 BAD_BODY (or 401) with the error body`, async () => {
    for (const body of garbage) {
      const r = await request(c.server.url, p, 'POST', body);
      assert.ok(r.status === 400 || r.status === 401, `${String(body)}: ${r.status}`);
      assert.ok(errorAnswerSchema.safeParse(r.body).success, JSON.stringify(r.body));
      assert.match(String(r.headers['content-type']), /^application\/json/);
    }
  });

  test(`a body over 1 MiB on ${p} is answered 400 BAD_BODY`, async () => {
    const r = await request(c.server.url, p, 'POST', Buffer.alloc(MAX_BODY_BYTES + 1, 0x7b));
    assert.deepEqual([r.status, r.body.error.code], [400, 'BAD_BODY']);
  });
}

test('a chunked body that grows past 1 MiB without a Content-Length is answered 400 and the connection closed', async () => {
  const url = new URL(c.server.url);
  const answer = await new Promise<string>((resolve) => {
    const sock = net.connect(Number(url.port), url.hostname);
    let text = '';
    sock.on('data', (d: Buffer) => (text += d.toString()));
    sock.on('close', () => resolve(text));
    sock.on('error', () => resolve(text));
    sock.write(`POST ${HEARTBEAT_PATH} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    for (let i = 0; i < 20; i++) sock.write(`${chunk.length.toString(16)}\r\n${chunk.toString()}\r\n`);
  });
  assert.match(answer, /^HTTP\/1\.1 400/);
  assert.match(answer, /"BAD_BODY"/);
});

test('after all of that the server still enrolls and accepts a heartbeat', async () => {
  const n = await new FakeNode(c).enroll();
  assert.equal((await n.heartbeat()).status, 200);
});
