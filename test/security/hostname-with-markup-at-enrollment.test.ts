// A host name is shown to every operator (the CLI, the dashboard): a node that enrolls under a
// name holding markup, blanks or control characters must be refused, by the control plane
// whatever the agent sends, and by agentctl before it makes anything (docs/design.md §12: RFC 1123).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ENROLL_PATH } from '../../src/core/control-api.js';
import { isHostname } from '../../src/core/name-checks.js';
import { dumpStore, FakeNode, post, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl } from '../helpers/host.js';

const HOSTILE = [
  '<img src=x onerror=alert(1)>',
  'web 1',
  'web\u001b[31m',
  'web\n2',
  'web_1',
  '-web',
  'web-',
  'web..example',
  'web.example.',
  '',
  'wéb',
  `${'a'.repeat(64)}.example`,
  Array.from({ length: 64 }, () => 'abc').join('.'),
];
const FINE = ['web-1', 'WEB1', '1host', 'a', 'web-1.eu.example.com', `${'a'.repeat(63)}.example`, Array.from({ length: 63 }, () => 'abc').join('.')];

test('the RFC 1123 host name rule takes labels of letters, digits and inner dashes, up to 63 and 253 characters', () => {
  for (const h of FINE) assert.equal(isHostname(h), true, h);
  for (const h of HOSTILE) assert.equal(isHostname(h), false, JSON.stringify(h));
});

let c: Control;
before(async () => {
  c = await startControlInProcess({});
});
after(() => c.close());

test('the control plane refuses an enrollment whose host name breaks RFC 1123 with 400 BAD_BODY naming the rule, and spends nothing', async () => {
  for (const hostname of HOSTILE) {
    const token = await c.token();
    const before = dumpStore(c.store);
    const answer = await post(c.server.url, ENROLL_PATH, new FakeNode(c, hostname).enrollBody(token));
    assert.deepEqual([answer.status, answer.body.error?.code], [400, 'BAD_BODY'], JSON.stringify(hostname));
    assert.match(answer.body.error.message, /hostname/);
    assert.deepEqual(dumpStore(c.store), before, 'nothing stored, the token not spent');
    assert.equal((await post(c.server.url, ENROLL_PATH, new FakeNode(c, 'web-1').enrollBody(token))).status, 200, 'the token still works');
  }
});

let cp: FakeControlPlane;
before(async () => {
  cp = new FakeControlPlane();
  await cp.listen();
});
after(() => cp.stop());

test('agentctl enroll --hostname with a name that breaks RFC 1123 exits 2 USAGE, sends nothing and writes nothing', async (t) => {
  const sent = cp.enrollBodies.length;
  for (const bad of ['<b>x</b>', 'web_1', 'web.example.']) {
    const h = useHost(t);
    cp.tokens.add('hostname-token-0123456789');
    const r = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', 'hostname-token-0123456789', '--hostname', bad, '--json']);
    assert.deepEqual([r.code, r.json?.error?.code], [2, 'USAGE'], r.stdout + r.stderr);
    assert.match(r.json.error.message, /RFC 1123/);
    assert.equal(existsSync(path.join(h.paths.agentDir, 'node.key')), false);
    assert.equal(existsSync(h.paths.nodeState), false);
  }
  assert.equal(cp.enrollBodies.length, sent, 'a usage error sends nothing');
  const ok = useHost(t);
  cp.tokens.add('hostname-token-good-0123456789');
  const r = await agentctl(ok, ['enroll', '--control-plane', cp.url, '--token', 'hostname-token-good-0123456789', '--hostname', 'web-7.eu', '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const payload = JSON.parse(Buffer.from((cp.enrollBodies.at(-1) as { payload: string }).payload, 'base64').toString('utf8'));
  assert.equal(payload.hostname, 'web-7.eu');
});
