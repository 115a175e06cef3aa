import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appRelease, freePort } from '../../fixtures/app-releases.js';
import { gzipTar, makeReleaseTar } from '../../fixtures/tar-writer.js';
import { makeReleaseKey, manifestFor } from '../../helpers/host.js';
import { bootOrSkip, CONTAINER_REPO, waitFor, type SystemdContainer } from '../../helpers/systemd-container.js';
import { reportScenarios, runIn, shIn, writeIn } from '../../helpers/container-exec.js';

// Issue 15 items 5 and 6 (and the unknown app of issue 17) under a real systemd 252, booted in a
// container (the repository mounted read-only at /opt/src): steward-helper as a unit, with a root
// prefix so that the fault seam can fail a staging write. Each request is what the agent sends
// for a rollout: `update` over helper.sock with a signed manifest, the tarball as an upload, and
// the control plane's attemptId. Each ends in a signed receipt at once and leaves no staging tree.

const ROOT = '/tmp/steward-e2e/root';
const SCRATCH = '/tmp/steward-e2e/scratch';
const HELPER_UNIT = 'steward-helper.service';
const APPS = `${ROOT}/opt/steward/apps`;
// The third archive write of a stage fails with EIO (the two hostile archives are the 1st and 2nd).
const FAULTS = 'eio:write:staging@3';
const CONFIG = { apps: { web: { runner: 'process', user: 'stwweb', group: 'stwweb', stopTimeoutMs: 2000 } } };

function agentctl(box: SystemdContainer, args: string[]) {
  return runIn(box, '/usr/bin/node', [`${CONTAINER_REPO}/bin/agentctl.js`, '--root', ROOT, ...args], 60_000);
}

test('under systemd, hostile or failing releases over helper.sock end in a receipt at once and leave no staging tree', { timeout: 180_000 }, async (t) => {
  const box = await bootOrSkip(t);
  if (!box) return;
  const ran: string[] = [];
  const planned = 5;
  t.after(async () => {
    await reportScenarios(box, ran, planned, { units: [HELPER_UNIT], lines: 80 });
    await box.stop();
  });

  const key = makeReleaseKey();
  assert.equal((await runIn(box, 'useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'stwweb'])).code, 0);
  await shIn(box, 'mkdir -p -m 0755 /tmp/steward-e2e "$1" "$2" "$1/etc/steward/trusted-keys/web" && chmod 0755 /tmp/steward-e2e "$1" "$2"', ROOT, SCRATCH);
  await writeIn(box, `${ROOT}/etc/steward/steward.json`, JSON.stringify(CONFIG, null, 2));
  await writeIn(box, `${ROOT}/etc/steward/trusted-keys/web/${key.keyId}.pub`, key.publicPem);
  const started = async () => {
    const r = await agentctl(box, ['status', '--json']);
    return r.code === 0 && r.json?.recovering === false;
  };
  const run = await runIn(box, 'systemd-run', [
    '--unit=steward-helper',
    '--property=Restart=always',
    '--property=RestartSec=1',
    `--setenv=STEWARD_FAULTS=${FAULTS}`,
    '--setenv=DEBUG=steward:*',
    '/usr/bin/node', `${CONTAINER_REPO}/bin/steward-helper.js`, '--root', ROOT,
  ]);
  assert.equal(run.code, 0, run.text);
  await waitFor('the helper to answer status', started, 30_000, 100);

  // `update` as the agent asks it for a rollout; the receipt it ended in, read back verified.
  const rollout = async (app: string, version: string, tgz: Buffer, attemptId: string) => {
    const file = `${SCRATCH}/${attemptId}.tgz`;
    const manifest = `${SCRATCH}/${attemptId}.manifest.json`;
    await writeIn(box, file, tgz);
    await writeIn(box, manifest, JSON.stringify(key.sign(manifestFor(app, version, tgz))));
    const t0 = Date.now();
    const answer = await agentctl(box, ['update', app, version, '--manifest', manifest, '--file', file, '--attempt-id', attemptId, '--socket', `${ROOT}/run/steward/helper.sock`, '--json']);
    const ms = Date.now() - t0;
    const listed = await agentctl(box, ['receipts', '--json']);
    assert.equal(listed.code, 0, listed.text);
    const mine = (listed.json.receipts as any[]).filter((r) => r.payload.attemptId === attemptId);
    assert.equal(mine.length, 1, `one receipt for ${attemptId}: ${listed.text}`);
    console.log(`${attemptId}: exit ${answer.code} in ${ms} ms, receipt ${mine[0].payload.outcome} ${mine[0].payload.reason?.code}`);
    return { answer, receipt: mine[0].payload };
  };
  const nothingStaged = async (version: string) => {
    const left = await shIn(box, 'ls -A "$1/web/.staging" 2>/dev/null; test ! -e "$1/web/versions/$2" || echo "versions/$2"', APPS, version);
    assert.equal(left.stdout.trim(), '', 'no staging tree and no versions/<version> left');
  };

  await t.test('a name longer than NAME_MAX: a refused receipt, UNSAFE_ARCHIVE', async () => {
    const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: `static/${'n'.repeat(256)}.css`, content: 'x' }]));
    const { answer, receipt } = await rollout('web', '1.0.0', tgz, 'run-1.web.1');
    assert.equal(answer.code, 3, answer.text);
    assert.deepEqual([receipt.outcome, receipt.reason.code], ['refused', 'UNSAFE_ARCHIVE']);
    await nothingStaged('1.0.0');
    ran.push('NAME_MAX');
  });

  await t.test('a .steward-valid folder in the archive: a refused receipt, UNSAFE_ARCHIVE, and versions/ never holds it', async () => {
    const tgz = gzipTar(makeReleaseTar('web', '1.0.0', [{ path: '.steward-valid/', type: 'dir' }, { path: '.steward-valid/x', content: '{}' }]));
    const { answer, receipt } = await rollout('web', '1.0.0', tgz, 'run-2.web.1');
    assert.equal(answer.code, 3, answer.text);
    assert.deepEqual([receipt.outcome, receipt.reason.code], ['refused', 'UNSAFE_ARCHIVE']);
    await nothingStaged('1.0.0');
    ran.push('.steward-valid folder');
  });

  await t.test('EIO while staging a good release: a failed receipt, IO_ERROR', async () => {
    const { answer, receipt } = await rollout('web', '1.0.0', appRelease('web', '1.0.0', await freePort()), 'run-3.web.1');
    assert.equal(answer.code, 1, answer.text);
    assert.deepEqual([receipt.outcome, receipt.reason.code], ['failed', 'IO_ERROR']);
    const journal = (await box.exec('journalctl', ['-u', HELPER_UNIT, '-o', 'cat', '--no-pager'])).stdout;
    assert.match(journal, /steward-fault-io eio write staging 3/);
    await nothingStaged('1.0.0');
    ran.push('EIO');
  });

  await t.test('an app not in the host config: a refused receipt, UNKNOWN_APP, and no folder for it', async () => {
    const { answer, receipt } = await rollout('ghost', '1.0.0', gzipTar(makeReleaseTar('ghost', '1.0.0')), 'run-4.ghost.1');
    assert.equal(answer.code, 3, answer.text);
    assert.deepEqual([receipt.app, receipt.outcome, receipt.reason.code], ['ghost', 'refused', 'UNKNOWN_APP']);
    const made = await shIn(box, 'test ! -e "$1/ghost" && ls "$2"', APPS, `${ROOT}/var/lib/steward/receipts`);
    assert.deepEqual(made.stdout.trim().split('\n').sort(), ['_unknown-apps.json', 'web.json']);
    ran.push('unknown app');
  });

  await t.test('a tree left read-only with a .steward-valid folder is removed when systemd restarts the SIGKILLed helper', async () => {
    // As an older steward left it: read-only folders, a folder in the marker's place, a symlink out.
    await shIn(box, [
      'd="$1/web/versions/2.0.0"',
      'mkdir -p "$d/.steward-valid/inner" "$d/lib/deep/er"',
      'echo "{}" > "$d/.steward-valid/inner/m.json" && echo x > "$d/lib/deep/er/f.js"',
      'ln -s /etc/passwd "$d/.steward-valid/passwd" && ln -s /etc "$d/etc"',
      'find "$d" -depth -type f -exec chmod 0444 {} + && find "$d" -depth -type d -exec chmod 0555 {} +',
    ].join(' && '), APPS);
    const passwd = (await shIn(box, 'stat -c %a:%s /etc/passwd')).stdout;
    const old = (await shIn(box, 'systemctl show -p MainPID --value "$1"', HELPER_UNIT)).stdout.trim();
    assert.equal((await runIn(box, 'systemctl', ['kill', '--kill-who=main', '-s', 'SIGKILL', HELPER_UNIT])).code, 0);
    await waitFor('a new helper process', async () => {
      const pid = (await shIn(box, 'systemctl show -p MainPID --value "$1"', HELPER_UNIT)).stdout.trim();
      return pid !== '0' && pid !== old;
    }, 15_000, 100);
    await waitFor('the restarted helper to answer', started, 30_000, 100);
    await shIn(box, 'test ! -e "$1/web/versions/2.0.0"', APPS);
    assert.equal((await shIn(box, 'stat -c %a:%s /etc/passwd')).stdout, passwd, 'a symlink out was never followed');
    ran.push('poisoned tree removed at start');
  });
});
