// A member of group `steward` can mint `refused` receipts as fast as helper.sock answers (every
// refused request that carries an attemptId gets one). The helper used to keep only the last 64
// receipts of an app, so a flood pushed out receipts the agent had not relayed yet: the control
// plane never learnt of them. Now the helper keeps every receipt above the agent's relay mark;
// past UNRELAYED_MAX unrelayed receipts, helper.sock gets RECEIPTS_UNRELAYED and no receipt, so
// the disk stays bounded; once the agent has relayed, the file shrinks back. Real helper, real
// agent, a control plane over HTTP.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { StewardError } from '../../src/core/errors.js';
import { receiptsFile } from '../../src/core/paths.js';
import { UNRELAYED_MAX } from '../../src/helper/receipts/receipt-store.js';
import { callHelper } from '../../src/protocol/client.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { useHost } from '../helpers/host-fixture.js';
import { agentctl, processApp, type TestHost } from '../helpers/host.js';

const cp = new FakeControlPlane();
after(() => cp.stop());

let id = 0;
// A rollback of an app with no previous version: refused (RELEASE_INVALID), with a receipt
// when it carries an attemptId. What any group member may send, as often as it likes.
async function refusedRollback(socket: string, attemptId: string): Promise<string> {
  try {
    await callHelper(socket, { v: 1, id: ++id, op: 'rollback', app: 'web', attemptId });
  } catch (err) {
    return (err as StewardError).code;
  }
  return 'ok';
}

async function flood(socket: string, prefix: string, count: number): Promise<string[]> {
  const codes: string[] = [];
  // Eight at a time: as fast as the helper answers, without queueing past its connection cap.
  for (let i = 0; i < count; i += 8) {
    codes.push(...(await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, j) => refusedRollback(socket, `${prefix}-${i + j}`)))));
  }
  return codes;
}

const helperSeqs = async (h: TestHost): Promise<number[]> => {
  const r = (await callHelper(h.paths.helperSock, { v: 1, id: ++id, op: 'receipts' })) as { receipts: Array<{ payload: string }> };
  return r.receipts.map((e) => JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')).seq as number);
};
const fileCount = (h: TestHost) => JSON.parse(readFileSync(receiptsFile(h.paths, 'web'), 'utf8')).receipts.length as number;

test('a flood of refused receipts over helper.sock never pushes out a receipt the agent has not relayed, and stops at the cap without a receipt', { timeout: 300_000 }, async (t) => {
  const h = useHost(t, { apps: { web: processApp() } });
  await h.startHelper();
  cp.heartbeatSeconds = 1;
  cp.tokens.add('flood-token-0123456789');
  await cp.listen();
  const enrolled = await agentctl(h, ['enroll', '--control-plane', cp.url, '--token', 'flood-token-0123456789', '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr + enrolled.stdout);

  // The control plane's attempt, refused while the agent is not running (or its control plane is
  // down): receipt seq 1, not relayed yet.
  assert.equal(await refusedRollback(h.paths.helperSock, 'run-1.victim'), 'RELEASE_INVALID');
  assert.deepEqual(await helperSeqs(h), [1]);

  // The flood: five times what the helper used to keep. Every refusal got its receipt, and the
  // victim's is still there.
  const codes = await flood(h.paths.helperSock, 'flood', 320);
  assert.deepEqual(new Set(codes), new Set(['RELEASE_INVALID']));
  const seqs = await helperSeqs(h);
  assert.equal(seqs[0], 1, 'the unrelayed receipt of the victim attempt is kept');
  assert.deepEqual(seqs, Array.from({ length: 321 }, (_, i) => i + 1), 'no receipt was dropped');

  // On to the cap: helper.sock is refused RECEIPTS_UNRELAYED, and no receipt is made for it.
  const more = await flood(h.paths.helperSock, 'more', UNRELAYED_MAX - 321 + 16);
  assert.equal(more.filter((c) => c === 'RELEASE_INVALID').length, UNRELAYED_MAX - 321);
  assert.equal(more.filter((c) => c === 'RECEIPTS_UNRELAYED').length, 16);
  assert.equal((await helperSeqs(h)).length, UNRELAYED_MAX, 'the disk holds no more than the cap');

  // The agent relays every one of them, the victim's first; then the helper lets them go.
  const a = startAgentProcess(h);
  await a.waitFor('every receipt stored by the control plane', () => cp.storedReceipts().length === UNRELAYED_MAX, 120_000);
  assert.deepEqual(cp.storedReceipts().map((r) => r.seq), Array.from({ length: UNRELAYED_MAX }, (_, i) => i + 1));
  assert.equal(cp.storedReceipts()[0]?.attemptId, 'run-1.victim');
  await a.waitFor('the relay mark to cover them', () => {
    try {
      return JSON.parse(readFileSync(`${h.paths.agentDir}/relayed.json`, 'utf8')).relayedSeq >= UNRELAYED_MAX;
    } catch {
      return false;
    }
  });
  assert.equal(await refusedRollback(h.paths.helperSock, 'after-relay'), 'RELEASE_INVALID', 'helper.sock gets receipts again');
  assert.ok(fileCount(h) <= 64, `the receipts file is back to the newest 64 (holds ${fileCount(h)})`);
});
