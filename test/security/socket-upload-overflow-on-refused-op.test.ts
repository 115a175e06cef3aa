// A request that announces an upload and sends more bytes than announced in its first read, for
// an op that the dispatcher then refuses, crashed the helper: the upload stream failed before any
// handler read it, and its 'error' had no listener. Found by test/property/local-api-parser.test.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { finalLine, rawExchange } from '../helpers/api-server-harness.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, type HelperProcess } from '../helpers/host.js';

const host = useHost(after);
let helper: HelperProcess;
before(async () => {
  helper = await host.startHelper();
});

const requests: Array<[string, 'adminSock' | 'helperSock', string]> = [
  ['status (takes no upload) with one byte over upload 0', 'adminSock', '{"v":1,"id":1,"op":"status","upload":0}\nX'],
  ['a stage refused by helper.sock policy with bytes over its upload', 'helperSock', '{"v":1,"id":2,"op":"stage","app":"web","version":"1.0.0","upload":1}\nXY'],
  ['a stage that fails its schema with bytes over its upload', 'adminSock', '{"v":1,"id":3,"op":"stage","app":"Web!","version":"1.0.0","upload":2}\nXYZ'],
];

for (const [name, sock, line] of requests) {
  test(`${name} gets BAD_REQUEST or FORBIDDEN and the helper keeps running`, async () => {
    const answer = finalLine(await rawExchange(host.paths[sock], line, { end: true }));
    assert.ok(['BAD_REQUEST', 'FORBIDDEN'].includes(answer.error.code), JSON.stringify(answer));
    const status = await agentctl(host, ['status', '--json']);
    assert.equal(status.code, 0, `the helper no longer answers: ${status.stderr}\n${helper.stderr().slice(-2000)}`);
    assert.equal(helper.child.exitCode, null, 'the helper exited');
  });
}
