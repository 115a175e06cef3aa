import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OpContext } from '../../../src/helper/server/api-server.js';
import { makeDispatch } from '../../../src/helper/server/dispatch.js';
import type { SocketKind } from '../../../src/protocol/schemas.js';
import { FAKE_MANIFEST, rejectsWithCode } from '../../helpers/api-server-harness.js';

const ctx = (kind: SocketKind): OpContext => ({ kind, id: 1, progress() {}, upload: null, uploadSize: 0, closed: new AbortController().signal, peer: async () => ({ ok: false as const, why: 'a test without a socket' }) });
const called: string[] = [];
const dispatch = makeDispatch({
  status: async (req) => (called.push('status'), { app: req.app ?? null }),
  stage: async (req) => (called.push('stage'), { app: req.app }),
});
const stage = { v: 1, id: 1, op: 'stage', app: 'web', version: '1.0.0', manifest: FAKE_MANIFEST };

// [name, socket, request, code, message pattern]
const refusals: Array<[string, SocketKind, unknown, string, RegExp]> = [
  ['not an object', 'admin', 'status', 'BAD_REQUEST', /invalid request/],
  ['wrong protocol version', 'admin', { v: 2, id: 1, op: 'status' }, 'BAD_REQUEST', /\bv\b/],
  ['an id that is an object', 'admin', { v: 1, id: {}, op: 'status' }, 'BAD_REQUEST', /\bid\b/],
  ['an unknown op', 'admin', { v: 1, id: 1, op: 'reboot' }, 'BAD_REQUEST', /unknown op "reboot"/],
  ['a known op without a handler', 'admin', { v: 1, id: 1, op: 'releases', app: 'web' }, 'BAD_REQUEST', /not supported by this helper/],
  ['a bad field names its path', 'admin', { v: 1, id: 1, op: 'status', app: 'Web!' }, 'BAD_REQUEST', /^invalid status request: app: /],
  ['an unknown field', 'admin', { v: 1, id: 1, op: 'status', extra: 1 }, 'BAD_REQUEST', /extra/],
  ['an upload on an op that takes none', 'admin', { v: 1, id: 1, op: 'status', upload: 3 }, 'BAD_REQUEST', /takes no upload/],
  ['recover on helper.sock', 'helper', { v: 1, id: 1, op: 'recover', app: 'web' }, 'FORBIDDEN', /admin\.sock/],
  ['prune on helper.sock', 'helper', { v: 1, id: 1, op: 'prune', app: 'web' }, 'FORBIDDEN', /admin\.sock/],
  ['a local path on helper.sock', 'helper', { ...stage, path: '/tmp/x.tgz' }, 'FORBIDDEN', /signed manifests by URL or upload/],
  ['allowUnsigned on helper.sock', 'helper', { ...stage, allowUnsigned: true }, 'FORBIDDEN', /allowUnsigned/],
  ['allowDowngrade on helper.sock', 'helper', { ...stage, allowDowngrade: true }, 'FORBIDDEN', /allowDowngrade/],
  ['no manifest on helper.sock', 'helper', { ...stage, manifest: undefined }, 'FORBIDDEN', /no manifest/],
];

for (const [name, kind, request, code, message] of refusals) {
  test(`dispatch refuses ${name} with ${code}`, async () => {
    called.length = 0;
    const err = await rejectsWithCode(dispatch(request, ctx(kind)), code);
    assert.match(err.message, message);
    assert.deepEqual(called, [], 'no handler ran');
  });
}

test('a valid request reaches its handler with the parsed request', async () => {
  assert.deepEqual(await dispatch({ v: 1, id: 'x', op: 'status', app: 'web' }, ctx('helper')), { app: 'web' });
  assert.deepEqual(await dispatch({ ...stage, path: '/tmp/x.tgz', allowUnsigned: true }, ctx('admin')), { app: 'web' });
  assert.deepEqual(await dispatch({ ...stage, upload: 10 }, ctx('helper')), { app: 'web' });
});

test('while recovering, mutating ops get RECOVERING and status still answers', async () => {
  const d = makeDispatch({ status: async () => 'up', stage: async () => 'staged' }, { recovering: () => true });
  await rejectsWithCode(d(stage, ctx('admin')), 'RECOVERING');
  assert.equal(await d({ v: 1, id: 1, op: 'status' }, ctx('admin')), 'up');
});
