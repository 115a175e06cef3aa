// The helper refuses to start an update or a stage past its rollout window's end (docs/design.md §11),
// on its own clock: WINDOW_CLOSED, a refusal, with a signed `refused` receipt when the request
// carried an attemptId; nothing changes on the host.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { callHelper } from '../../src/protocol/client.js';
import { makeHost, makeReleaseKey, manifestFor, processApp, snapshotTree, startHelper, type HelperProcess, type ReleaseKey, type TestHost } from '../helpers/host.js';

let host: TestHost;
let helper: HelperProcess;
let key: ReleaseKey;

before(async () => {
  host = makeHost({ apps: { web: processApp() } });
  key = makeReleaseKey(host, ['web']);
  helper = await startHelper(host);
});
after(async () => {
  await helper?.stop();
  host?.cleanup();
});

const manifest = () => key.sign(manifestFor('web', '1.0.0', Buffer.from('any bytes')));
const update = (extra: Record<string, unknown>) => callHelper(host.paths.helperSock, { v: 1, id: 1, op: 'update', app: 'web', version: '1.0.0', manifest: manifest(), by: 'steward-agent', ...extra });
const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (e: { code?: string }) => e.code);

test('an update whose notAfter has passed is refused WINDOW_CLOSED with a refused receipt, and changes nothing', async () => {
  // What an update changes: the release store, the journal, the app's state (receipts aside).
  const snapshot = async () => [await snapshotTree(host.paths.appsDir), await snapshotTree(host.paths.journalDir), await snapshotTree(host.paths.supervisorDir)];
  const before = await snapshot();
  assert.equal(await codeOf(update({ attemptId: 'r1-closed', notAfter: Date.now() - 1000 })), 'WINDOW_CLOSED');
  const { receipts } = (await callHelper(host.paths.helperSock, { v: 1, id: 2, op: 'receipts', app: 'web' })) as { receipts: Array<{ payload: string }> };
  const payloads = receipts.map((r) => JSON.parse(Buffer.from(r.payload, 'base64').toString('utf8')));
  const mine = payloads.filter((p) => p.attemptId === 'r1-closed');
  assert.deepEqual(mine.map((p) => [p.outcome, p.reason?.code, p.targetVersion]), [['refused', 'WINDOW_CLOSED', '1.0.0']]);
  assert.deepEqual(await snapshot(), before);
});

test('a stage whose notAfter has passed is refused WINDOW_CLOSED; one inside its window goes on to the fetch', async () => {
  assert.equal(await codeOf(callHelper(host.paths.helperSock, { v: 1, id: 3, op: 'stage', app: 'web', version: '1.0.0', manifest: manifest(), notAfter: Date.now() })), 'WINDOW_CLOSED');
  // Inside the window the request is checked as any other: this manifest's URL cannot be fetched.
  assert.equal(await codeOf(update({ attemptId: 'r1-open', notAfter: Date.now() + 3_600_000 })), 'FETCH_FAILED');
});
