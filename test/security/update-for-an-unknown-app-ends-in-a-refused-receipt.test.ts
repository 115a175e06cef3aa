import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { StewardError } from '../../src/core/errors.js';
import { appDir, receiptsFile } from '../../src/core/paths.js';
import { UNKNOWN_APPS_RECEIPTS } from '../../src/core/name-checks.js';
import { callHelper } from '../../src/protocol/client.js';
import { startAgentProcess } from '../helpers/agent-process.js';
import { FakeControlPlane } from '../helpers/fake-control-plane.js';
import { agentctl, manifestFor } from '../helpers/host.js';
import { receiptOf, signedHost, updateOverHelperSock } from '../helpers/helper-sock-attempts.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

// Issue 17: a control plane may ask a node for an app its host config does not name. The helper
// refused it with UNKNOWN_APP and no receipt, so the rollout waited for its verdict timeout. Now
// the refusal has its signed `refused` receipt, which the agent relays like any other. Its home:
// receipts/_unknown-apps.json, one file that every app not in the config shares (`_` starts no
// app name), trimmed to 64 receipts like any receipts file, so a caller of helper.sock naming
// made-up apps makes no folder or file per name.

test('a rollout of an app not in the host config ends in a refused receipt (UNKNOWN_APP) that the agent relays to the control plane', { timeout: 120_000 }, async (t) => {
  const s = await signedHost(t);
  const cp = new FakeControlPlane();
  t.after(() => cp.stop());
  cp.tokens.add('unknown-app-token-0123456789');
  await cp.listen();
  const enrolled = await agentctl(s.host, ['enroll', '--control-plane', cp.url, '--token', 'unknown-app-token-0123456789', '--json']);
  assert.equal(enrolled.code, 0, enrolled.stderr);
  const tgz = gzipTar(makeReleaseTar('ghost', '1.0.0'));
  cp.desired = [{ app: 'ghost', version: '1.0.0', attemptId: 'rollout-9.ghost.1', manifest: s.key.sign(manifestFor('ghost', '1.0.0', tgz)) }];
  const agent = startAgentProcess(s.host);
  await agent.waitFor('the refused receipt at the control plane', () => cp.storedReceipts().some((r) => r.attemptId === 'rollout-9.ghost.1'), 60_000);
  const [receipt] = cp.storedReceipts().filter((r) => r.attemptId === 'rollout-9.ghost.1');
  assert.equal(receipt?.app, 'ghost');
  assert.equal(receipt?.outcome, 'refused');
  assert.equal(receipt?.reason?.code, 'UNKNOWN_APP');
  assert.equal(receipt?.nodeId, enrolled.json.nodeId);
  assert.equal(existsSync(appDir(s.host.paths, 'ghost')), false, 'no folder for the unknown app');
});

test('requests for 100 made-up apps make one bounded receipts file and nothing per name; the same attemptId again is answered from its receipt', { timeout: 120_000 }, async (t) => {
  const s = await signedHost(t);
  const first = await updateOverHelperSock(s, 'ghost', '1.0.0', gzipTar(makeReleaseTar('ghost', '1.0.0')), 'rollout-10.ghost.1');
  assert.equal(first.code, 3, first.stderr + first.stdout);
  assert.equal(first.json.error.code, 'UNKNOWN_APP');
  const receipt = await receiptOf(s, 'rollout-10.ghost.1');
  assert.deepEqual([receipt.app, receipt.outcome, receipt.reason.code], ['ghost', 'refused', 'UNKNOWN_APP']);

  const before = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : []);
  const watched = [s.host.paths.stateDir, s.host.paths.journalDir, s.host.paths.supervisorDir, s.host.paths.logDir, path.dirname(appDir(s.host.paths, 'web'))];
  const listed = watched.map(before);
  for (let i = 0; i < 100; i++) {
    await assert.rejects(callHelper(s.host.paths.helperSock, { v: 1, id: i, op: 'update', app: `made-up-${i}`, version: '1.0.0', attemptId: `flood-${i}`, manifest: s.key.sign(manifestFor(`made-up-${i}`, '1.0.0', Buffer.from('x'))) }), (err: unknown) => err instanceof StewardError && err.code === 'UNKNOWN_APP');
  }
  assert.deepEqual(readdirSync(s.host.paths.receiptsDir).sort(), [`${UNKNOWN_APPS_RECEIPTS}.json`], 'one receipts file for every unknown app');
  assert.deepEqual(watched.map(before), listed, 'no folder or file was made for a made-up name');
  const shared = JSON.parse(readFileSync(receiptsFile(s.host.paths, UNKNOWN_APPS_RECEIPTS), 'utf8'));
  assert.equal(shared.app, UNKNOWN_APPS_RECEIPTS);
  assert.equal(shared.receipts.length, 64, 'trimmed to the last 64');

  // What the agent reads each heartbeat: every app's receipts, the unknown ones among them.
  const all = (await callHelper(s.host.paths.helperSock, { v: 1, id: 200, op: 'receipts' })) as { receipts: Array<{ payload: string }> };
  const apps = all.receipts.map((e) => JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')).app as string);
  assert.equal(apps.length, 64);
  assert.equal(apps.at(-1), 'made-up-99');

  // The newest one asked again: its settled receipt, not a second one.
  const again = (await callHelper(s.host.paths.helperSock, { v: 1, id: 201, op: 'update', app: 'made-up-99', version: '1.0.0', attemptId: 'flood-99', manifest: s.key.sign(manifestFor('made-up-99', '1.0.0', Buffer.from('x'))) })) as { outcome: string; settled: boolean };
  assert.deepEqual([again.outcome, again.settled], ['refused', true]);
  assert.equal(JSON.parse(readFileSync(receiptsFile(s.host.paths, UNKNOWN_APPS_RECEIPTS), 'utf8')).receipts.length, 64);
});
