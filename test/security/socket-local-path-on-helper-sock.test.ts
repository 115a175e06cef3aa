import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { callHelper } from '../../src/protocol/client.js';
import { makeDispatch } from '../../src/helper/server/dispatch.js';
import { assertStillAnswers, FAKE_MANIFEST, rejectsWithCode, startTestServers, testHandlers, type TestServers } from '../helpers/api-server-harness.js';

let s: TestServers;
const staged: unknown[] = [];
before(async () => {
  s = await startTestServers({}, { ...testHandlers, stage: async (req) => void staged.push(req) });
});
after(() => s.close());

const base = { v: 1, id: 1, op: 'stage', app: 'web', version: '1.0.0', manifest: FAKE_MANIFEST };

test('stage with a local path on helper.sock is FORBIDDEN and the handler never runs', async () => {
  const err = await rejectsWithCode(callHelper(s.helperSock, { ...base, path: '/etc/shadow' }), 'FORBIDDEN');
  assert.match(err.message, /helper\.sock accepts only signed manifests by URL or upload/);
  assert.doesNotMatch(err.message, /shadow/);
  assert.deepEqual(staged, []);
  await assertStillAnswers(s);
});

test('allowUnsigned, allowDowngrade or a missing manifest on helper.sock are FORBIDDEN', async () => {
  for (const extra of [{ allowUnsigned: true }, { allowDowngrade: true }, { manifest: undefined, integrity: undefined }]) {
    await rejectsWithCode(callHelper(s.helperSock, { ...base, ...extra }), 'FORBIDDEN');
  }
  assert.deepEqual(staged, []);
  await assertStillAnswers(s);
});

test('the same requests on admin.sock reach the handler', async () => {
  await callHelper(s.adminSock, { ...base, path: '/tmp/web.tgz', allowUnsigned: true, allowDowngrade: true });
  assert.equal(staged.length, 1);
  // and a signed manifest on helper.sock does too
  await callHelper(s.helperSock, base);
  assert.equal(staged.length, 2);
});

test('the policy holds for update, whose handler does not exist yet', async () => {
  const dispatch = makeDispatch({});
  const ctx = { kind: 'helper' as const, id: 1, progress() {}, upload: null, uploadSize: 0, closed: new AbortController().signal, peer: async () => ({ ok: false as const, why: 'a test without a socket' }) };
  await rejectsWithCode(dispatch({ ...base, op: 'update', path: '/x' }, ctx), 'FORBIDDEN');
});
