import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { UnitStatus } from '../../../src/helper/runners/unit-runner.js';
import { bootOrSkip } from '../../helpers/systemd-container.js';
import { startDriver } from '../../helpers/runner-driver.js';

// The `unit` runner against a real systemd 252 in a container: an existing unit is started,
// observed (ActiveState, MainPID, NRestarts) and stopped; its own Restart= governs restarts.

const UNIT = 'stw-demo.service';
const UNIT_FILE = `[Unit]
Description=steward unit-runner test

[Service]
ExecStart=/usr/bin/sleep 300
Restart=always
RestartSec=200ms
`;

test('the unit runner starts, observes and stops an existing unit', { timeout: 90_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  const helper = startDriver(box);
  try {
    // The unit text goes in as an argument ($1), not through a shell's parsing of it.
    const put = await box.exec('sh', ['-c', `printf '%s' "$1" > /etc/systemd/system/${UNIT} && systemctl daemon-reload`, 'sh', UNIT_FILE]);
    assert.equal(put.code, 0, put.stderr);
    await helper.ready;
    const status = async () => (await helper.call<{ status: UnitStatus }>('unitStatus', { unit: UNIT })).status;

    const before = await status();
    assert.equal(before.loadState, 'loaded');
    assert.equal(before.activeState, 'inactive');
    assert.equal(before.mainPid, 0);

    await helper.call('unitStart', { unit: UNIT });
    const up = await status();
    assert.equal(up.activeState, 'active');
    assert.equal(up.subState, 'running');
    assert.ok(up.mainPid > 0);
    assert.equal(up.nRestarts, 0);
    await helper.call('unitStart', { unit: UNIT }); // idempotent
    assert.equal((await status()).mainPid, up.mainPid, 'a second start leaves the running unit alone');

    // Its own Restart= brings it back after a crash; the helper only observes NRestarts.
    assert.equal((await box.exec('kill', ['-KILL', String(up.mainPid)])).code, 0);
    let again = await status();
    for (let i = 0; i < 50 && !(again.activeState === 'active' && again.mainPid > 0 && again.mainPid !== up.mainPid); i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await status();
    }
    assert.equal(again.activeState, 'active');
    assert.notEqual(again.mainPid, up.mainPid);
    assert.equal(again.nRestarts, 1);

    await helper.call('unitStop', { unit: UNIT });
    const down = await status();
    assert.equal(down.activeState, 'inactive');
    assert.equal(down.mainPid, 0);
    await helper.call('unitStop', { unit: UNIT }); // idempotent

    const unknown = await helper.call<{ status: UnitStatus }>('unitStatus', { unit: 'no-such-thing.service' });
    assert.equal(unknown.status.loadState, 'not-found');
    await helper.call('unitStop', { unit: 'no-such-thing.service' }); // nothing runs: success
    await assert.rejects(helper.call('unitStart', { unit: 'no-such-thing.service' }), /systemctl start -- no-such-thing.service failed/);
    await assert.rejects(helper.call('unitStatus', { unit: '../etc/passwd' }), /not a systemd service unit name/);
  } finally {
    helper.child.stdin?.end();
    await box.stop();
  }
});
