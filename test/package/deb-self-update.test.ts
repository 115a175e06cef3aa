import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runIn as run, shIn as sh, writeIn } from '../helpers/container-exec.js';
import { bootForDpkg, mainPid, runWebApp, statusOf, statusOnceUp, stewardReceiptMatching, trialsOf, webRunning } from '../helpers/deb-container.js';
import { makeReleaseKey } from '../helpers/host.js';
import { stewardReleaseFiles } from '../helpers/self-release.js';
import { waitFor } from '../helpers/systemd-container.js';

// Self-update under a real systemd (docs/design.md §14), one container: the packaged helper unit runs the
// launcher (Type=notify). A good release of steward is tried once and commits, and the unit is
// `active` only after the commit; one that exits at start and one that hangs before binding its
// sockets (ended by the unit's start timeout), and one killed with SIGKILL during its probe, each
// run once and are reverted by the unit's next start, with a receipt. The app `web` is the same
// process throughout.

type Behaviour = 'good' | 'exit' | 'hang';
const PRELUDE: Record<Behaviour, string> = { good: '', exit: 'process.exit(3);\n', hang: 'setInterval(() => {}, 1000);\nawait new Promise(() => {});\n' };

test('a self-update under systemd: a good release commits before the unit is active; one that exits, hangs or is killed runs once and is reverted with a receipt', { timeout: 420_000 }, async (t) => {
  const c = await bootForDpkg(t);
  if (!c) return;
  const { box, deb, dpkg } = c;
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'steward-self-deb-'));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const install = await run(box, 'dpkg', dpkg('-i', deb), 180_000);
  assert.equal(install.code, 0, install.text);
  await statusOnceUp(box);
  const webPid = await runWebApp(box);
  const key = makeReleaseKey();
  await sh(box, 'mkdir -p /etc/steward/trusted-keys/steward /etc/systemd/system/steward-helper.service.d');
  await writeIn(box, `/etc/steward/trusted-keys/steward/${key.keyId}.pub`, key.publicPem);
  // The start timeout of a hung candidate, shorter than the package's 300 s for the test.
  await writeIn(box, '/etc/systemd/system/steward-helper.service.d/timeout.conf', '[Service]\nTimeoutStartSec=25\n');
  await sh(box, 'systemctl daemon-reload');

  const update = async (version: string, behaviour: Behaviour): Promise<string> => {
    const rel = await stewardReleaseFiles(scratch, key, version, (tree) => {
      const entry = path.join(tree, 'bin/steward-helper.js');
      writeFileSync(entry, PRELUDE[behaviour] + readFileSync(entry, 'utf8'));
    });
    await writeIn(box, `/tmp/steward-${version}.tgz`, readFileSync(rel.tgz));
    await writeIn(box, `/tmp/steward-${version}.json`, readFileSync(rel.manifest));
    const r = await run(box, 'agentctl', ['--json', 'update', 'steward', version, '--file', `/tmp/steward-${version}.tgz`, '--manifest', `/tmp/steward-${version}.json`], 120_000);
    assert.equal(r.json?.accepted, true, r.text);
    return r.json.attemptId as string;
  };
  const settled = (attemptId: string) => stewardReceiptMatching(box, `the receipt of ${attemptId}`, (p) => p.attemptId === attemptId, 120_000);

  await t.test('a good release is tried once and commits; the unit is active only once it did', async () => {
    const attemptId = await update('50.0.0', 'good');
    const receipt = await settled(attemptId);
    assert.equal(receipt.outcome, 'active');
    const s = await statusOf(box, 'steward');
    assert.deepEqual([s.self.version, s.self.decision, s.current], ['50.0.0', 'trial', '50.0.0']);
    // Type=notify: active, and the commit (no `trying` left) came before it.
    assert.equal((await run(box, 'systemctl', ['is-active', 'steward-helper.service'])).stdout.trim(), 'active');
    await sh(box, 'test ! -e /var/lib/steward/self/trying && test ! -e /var/lib/steward/self/starts');
    assert.equal(await trialsOf(box, '50.0.0'), 1);
    assert.equal((await webRunning(box)).supervisor.pid, webPid, 'web is the same process');
  });

  await t.test('a SIGKILL of the candidate during its probe reverts it at the next start, with a receipt', async () => {
    const attemptId = await update('53.0.0', 'good');
    // Its 5 s of stableMs: the candidate runs and has not committed.
    await waitFor('the candidate on trial', async () => (await trialsOf(box, '53.0.0')) === 1 && (await run(box, 'test', ['-e', '/var/lib/steward/self/trying'])).code === 0, 60_000, 200);
    await sh(box, 'kill -KILL "$(systemctl show -p MainPID --value steward-helper.service)"');
    const receipt = await settled(attemptId);
    assert.deepEqual([receipt.outcome, receipt.reason?.code], ['rolled-back', 'REPLACEMENT_UNHEALTHY']);
    const s = await statusOf(box, 'steward');
    assert.deepEqual([s.self.version, s.current], ['50.0.0', '50.0.0']);
    assert.equal(await trialsOf(box, '53.0.0'), 1, 'the candidate ran once');
    assert.equal((await webRunning(box)).supervisor.pid, webPid, 'web is the same process');
  });

  for (const [behaviour, version, what] of [['exit', '51.0.0', 'exits at its start'], ['hang', '52.0.0', 'hangs before binding its sockets']] as const) {
    await t.test(`a release that ${what} runs once and the committed release closes it rolled-back`, async () => {
      const attemptId = await update(version, behaviour);
      const receipt = await settled(attemptId);
      assert.deepEqual([receipt.outcome, receipt.reason?.code], ['rolled-back', 'REPLACEMENT_UNHEALTHY']);
      const s = await statusOf(box, 'steward');
      assert.deepEqual([s.self.version, s.current], ['50.0.0', '50.0.0']);
      assert.ok(s.quarantined.includes(version));
      assert.equal(await trialsOf(box, version), 1, 'the candidate ran once');
      assert.equal((await run(box, 'systemctl', ['is-active', 'steward-helper.service'])).stdout.trim(), 'active');
      const web = await webRunning(box);
      assert.equal(web.supervisor.pid, webPid, 'web is the same process');
      assert.equal((await statusOf(box, 'web')).blocked, null);
      assert.equal(await mainPid(box, 'steward-app-web.service'), String(webPid));
    });
  }
});
