import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { callHelper } from '../../src/protocol/client.js';
import { assertStillAnswers, rejectsWithCode, startTestServers, testHandlers, type TestServers } from '../helpers/api-server-harness.js';

let s: TestServers;
let ran: string[] = [];
before(async () => {
  ran = [];
  s = await startTestServers({}, {
    ...testHandlers,
    recover: async () => void ran.push('recover'),
    prune: async () => void ran.push('prune'),
  });
});
after(() => s.close());

test('recover and prune on helper.sock are FORBIDDEN and never reach their handler', async () => {
  for (const op of ['recover', 'prune']) {
    const err = await rejectsWithCode(callHelper(s.helperSock, { v: 1, id: 1, op, app: 'web' }), 'FORBIDDEN');
    assert.match(err.message, /only available on admin\.sock/);
  }
  assert.deepEqual(ran, []);
  await assertStillAnswers(s);
});

test('rollback --to on helper.sock is FORBIDDEN', async () => {
  await rejectsWithCode(callHelper(s.helperSock, { v: 1, id: 1, op: 'rollback', app: 'web', to: '1.0.0' }), 'FORBIDDEN');
  await assertStillAnswers(s);
});
