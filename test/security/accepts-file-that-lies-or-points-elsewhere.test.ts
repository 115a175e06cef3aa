// accepts.json (core/control-plane-accepts.ts) sits in the agent's folder: the `steward` user
// writes it, root reads it. Whatever it holds (a symlink to a file of root's, a FIFO, another
// owner's file, garbage, a huge file, versions nobody knows) the helper neither hangs nor trusts
// it: it signs v1, which every control plane takes; only a well-formed list naming 2, written by
// the agent version that runs now, makes v2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { acceptsFile } from '../../src/core/control-plane-accepts.js';
import { readAcceptedReceiptVersions } from '../../src/helper/receipts/read-accepts.js';
import { ReceiptStore } from '../../src/helper/receipts/receipt-store.js';
import { loadOrCreateHelperKey } from '../../src/host/helper-key.js';
import { systemClock } from '../../src/platform/clock.js';
import { useHost } from '../helpers/host-fixture.js';
import { IS_ROOT } from '../helpers/host.js';

test('a lying, linked or foreign accepts.json makes the helper sign v1, and never hangs it', async (t) => {
  const host = useHost(t, { apps: {} });
  mkdirSync(host.paths.agentDir, { recursive: true, mode: 0o700 });
  const file = acceptsFile(host.paths);
  const reset = () => rmSync(file, { force: true, recursive: true });
  assert.equal(await readAcceptedReceiptVersions(host.paths), null, 'absent');
  const cases: Array<[string, number[] | null]> = [
    ['{"schemaVersion":1,"receiptVersions":[1,2],"agentVersion":"0.1.0"}', [1, 2]],
    ['{"schemaVersion":1,"receiptVersions":[1,2,7],"agentVersion":"0.1.0"}', [1, 2, 7]],
    ['{"schemaVersion":2,"receiptVersions":[1,2],"agentVersion":"0.1.0"}', null],
    ['{"schemaVersion":1,"receiptVersions":[],"agentVersion":"0.1.0"}', null],
    ['{"schemaVersion":1,"receiptVersions":[1,2],"agentVersion":"0.1.0","more":true}', null],
    ['{"schemaVersion":1,"receiptVersions":[1.5],"agentVersion":"0.1.0"}', null],
    ['{"schemaVersion":1,"receiptVersions":"2","agentVersion":"0.1.0"}', null],
    ['not json', null],
    ['{"schemaVersion":1,"receiptVersions":[1,2]}', null],
    ['{"schemaVersion":1,"receiptVersions":[1,2],"agentVersion":"<b>"}', null],
    [JSON.stringify({ schemaVersion: 1, receiptVersions: Array(5000).fill(2), agentVersion: '0.1.0' }), null],
  ];
  for (const [body, want] of cases) {
    reset();
    writeFileSync(file, body);
    assert.deepEqual(await readAcceptedReceiptVersions(host.paths), want, body.slice(0, 60));
  }
  // Written by another agent version than the one the steward-agent app runs now (an older agent
  // rolled back to, which relays v1 only): it speaks for nobody.
  reset();
  writeFileSync(file, '{"schemaVersion":1,"receiptVersions":[1,2],"agentVersion":"0.2.0"}');
  assert.deepEqual(await readAcceptedReceiptVersions(host.paths, '0.2.0'), [1, 2]);
  assert.equal(await readAcceptedReceiptVersions(host.paths, '0.1.0'), null, 'another agent version runs now');
  assert.equal(await readAcceptedReceiptVersions(host.paths, ''), null, 'no valid agent version runs now');
  const rootsOwn = path.join(host.scratch, 'accepts-of-root.json');
  writeFileSync(rootsOwn, '{"schemaVersion":1,"receiptVersions":[1,2],"agentVersion":"0.1.0"}');
  reset();
  symlinkSync(rootsOwn, file);
  assert.equal(await readAcceptedReceiptVersions(host.paths), null, 'a symlink is not followed');
  reset();
  execFileSync('mkfifo', [file]);
  assert.equal(await readAcceptedReceiptVersions(host.paths), null, 'a FIFO, and no hang');
  if (IS_ROOT) {
    reset();
    writeFileSync(file, '{"schemaVersion":1,"receiptVersions":[1,2],"agentVersion":"0.1.0"}');
    chownSync(file, 65534, 65534);
    assert.equal(await readAcceptedReceiptVersions(host.paths), null, "not the agent folder owner's");
  }

  // And the receipts the helper signs meanwhile are v1.
  reset();
  writeFileSync(file, 'not json');
  const store = new ReceiptStore({ paths: host.paths, clock: systemClock, signer: await loadOrCreateHelperKey(host.paths), nodeId: async () => 'n-1', acceptedVersions: () => readAcceptedReceiptVersions(host.paths), logTail: () => true });
  mkdirSync(host.paths.logDir, { recursive: true });
  writeFileSync(path.join(host.paths.logDir, 'web-a1.log'), 'boom\n');
  const r = await store.emit({ app: 'web', attemptId: 'a1', fromVersion: '1.0.0', targetVersion: '2.0.0', integrity: null, outcome: 'rolled-back', startedAt: 1, updatedAt: 2, logFile: path.join(host.paths.logDir, 'web-a1.log') });
  assert.equal(r.payload.v, 1);
  assert.equal(r.payload.logTail, undefined);
});
